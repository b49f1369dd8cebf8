ALTER TABLE "receipts" ADD COLUMN "return_url" text;--> statement-breakpoint
-- returnUrl joins the receipt's summary after its metadata (the route schemas' order); null when
-- none was sent. Otherwise 0020's definition.
CREATE OR REPLACE FUNCTION receipt_summary_json(r receipts) RETURNS text LANGUAGE sql STABLE AS $$
  SELECT '"receiptId":' || to_json(r.id)::text
    || ',"totalUsd":' || trim_scale(r.total_cents::numeric / 100)::text
    || ',"currency":' || to_json(r.currency)::text
    || ',"lineItems":' || coalesce((SELECT '[' || string_agg('{"label":' || to_json(e.item->>'label')::text
           || ',"priceUsd":' || trim_scale((e.item->>'priceCents')::bigint::numeric / 100)::text
           || CASE WHEN e.item ? 'qty' THEN ',"qty":' || (e.item->'qty')::text ELSE '' END || '}', ',' ORDER BY e.n) || ']'
         FROM jsonb_array_elements(r.line_items) WITH ORDINALITY AS e(item, n)), '[]')
    || ',"createdAt":' || r.created_at::text
    || ',"metadata":' || coalesce((SELECT '{' || string_agg(to_json(m.key)::text || ':' || to_json(m.value)::text, ',' ORDER BY m.n) || '}'
         FROM jsonb_each_text(r.metadata) WITH ORDINALITY AS m(key, value, n)), '{}')
    || ',"returnUrl":' || coalesce(to_json(r.return_url)::text, 'null')
$$;--> statement-breakpoint
-- Summaries stored before: rendered again, with their (null) returnUrl.
UPDATE receipts r SET summary_json = receipt_summary_json(r) WHERE summary_json IS NOT NULL;
