ALTER TABLE "receipts" ADD COLUMN "metadata" jsonb DEFAULT '{}'::jsonb NOT NULL;--> statement-breakpoint
-- The shop's own fields join the receipt's summary after its creation time (the route schemas'
-- order), compact as the service's serializer writes JSON, keys in the order jsonb keeps them (the
-- order the service reads them in for the status answer and webhook events). Otherwise 0017's
-- definition.
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
$$;--> statement-breakpoint
-- Summaries stored before: rendered again, with their (empty) metadata.
UPDATE receipts r SET summary_json = receipt_summary_json(r) WHERE summary_json IS NOT NULL;
