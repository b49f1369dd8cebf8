-- A receipt's answer JSON, defined once: here (docs/decisions.md, "Receipt reads"). The creating
-- statement (src/db/receipt-store.ts) renders a new receipt's views with these functions, the
-- triggers of 0010 render them again on every change, and reads render a row stored without them:
-- adding a field to the receipt's answer is a change of one of these functions (and the route's
-- schema). Each function's text is a fragment of the answer's members, without braces.
--
-- The fixed part of the summary: id, total, currency, line items, creation time.
CREATE FUNCTION receipt_summary_json(r receipts) RETURNS text LANGUAGE sql STABLE AS $$
  SELECT '"receiptId":' || to_json(r.id)::text
    || ',"totalUsd":' || trim_scale(r.total_cents::numeric / 100)::text
    || ',"currency":' || to_json(r.currency)::text
    || ',"lineItems":' || coalesce((SELECT '[' || string_agg('{"label":' || to_json(e.item->>'label')::text
           || ',"priceUsd":' || trim_scale((e.item->>'priceCents')::bigint::numeric / 100)::text
           || CASE WHEN e.item ? 'qty' THEN ',"qty":' || (e.item->'qty')::text ELSE '' END || '}', ',' ORDER BY e.n) || ']'
         FROM jsonb_array_elements(r.line_items) WITH ORDINALITY AS e(item, n)), '[]')
    || ',"createdAt":' || r.created_at::text
$$;--> statement-breakpoint
-- The status, payment state and refunded sum (10,000 token base units make a cent: USDC has 6 decimals).
CREATE FUNCTION receipt_state_json(r receipts, refunded_cents numeric) RETURNS text LANGUAGE sql STABLE AS $$
  SELECT ',"status":' || to_json(r.status)::text
    || ',"exception":' || coalesce(to_json(r.exception)::text, 'null')
    || ',"expiresAt":' || r.expires_at::text
    || ',"amountPaid":"' || r.paid_units || '"'
    || ',"amountDue":"' || greatest(r.total_cents::numeric * 10000 - r.paid_units::numeric, 0)::text || '"'
    || ',"refundedUsd":' || trim_scale(refunded_cents / 100)::text
$$;--> statement-breakpoint
-- One status history entry; "count" only on an entry recorded more than once (repeated tracking statuses).
CREATE FUNCTION receipt_history_entry_json(entry_status text, entry_at bigint, entry_source text, entry_count integer) RETURNS text LANGUAGE sql STABLE AS $$
  SELECT '{"status":' || to_json(entry_status)::text || ',"at":' || entry_at::text || ',"source":' || to_json(entry_source)::text
    || CASE WHEN entry_count > 1 THEN ',"count":' || entry_count::text ELSE '' END || '}'
$$;--> statement-breakpoint
-- The tax, transaction, status history and refunds members; `history` and `refunds_json` are JSON arrays.
CREATE FUNCTION receipt_detail_json(r receipts, history text, refunds_json text) RETURNS text LANGUAGE sql STABLE AS $$
  SELECT ',"jurisdictionCode":' || coalesce(to_json(r.jurisdiction_code)::text, 'null')
    || ',"taxRate":' || coalesce(trim_scale(r.tax_rate_ppm::numeric / 1000000)::text, '0')
    || ',"taxComponents":' || coalesce((SELECT '[' || string_agg(to_json(c.v)::text, ',' ORDER BY c.n) || ']'
         FROM jsonb_array_elements_text(r.tax_components) WITH ORDINALITY AS c(v, n)), '[]')
    || CASE WHEN r.transaction_hash IS NULL THEN '' ELSE ',"transactionHash":' || to_json(r.transaction_hash)::text END
    || CASE WHEN r.transaction_timestamp IS NULL THEN '' ELSE ',"transactionTimestamp":' || r.transaction_timestamp::text END
    || ',"statusHistory":' || history
    || ',"refunds":' || refunds_json
$$;--> statement-breakpoint
-- The whole renderings from the receipt's stored history and refunds, as the triggers and reads use them.
CREATE OR REPLACE FUNCTION receipt_state_json(r receipts) RETURNS text LANGUAGE sql STABLE AS $$
  SELECT receipt_state_json(r, coalesce((SELECT sum(f.amount_cents) FROM refunds f WHERE f.wallet = r.wallet AND f.receipt_id = r.id), 0)::numeric)
$$;--> statement-breakpoint
CREATE OR REPLACE FUNCTION receipt_detail_json(r receipts) RETURNS text LANGUAGE sql STABLE AS $$
  SELECT receipt_detail_json(r,
    coalesce((SELECT '[' || string_agg(receipt_history_entry_json(h.status, h.at, h.source, h.count), ',' ORDER BY h.seq) || ']'
      FROM receipt_status_history h WHERE h.wallet = r.wallet AND h.receipt_id = r.id), '[]'),
    coalesce((SELECT '[' || string_agg('{"id":' || to_json(f.id)::text || ',"usd":' || trim_scale(f.amount_cents::numeric / 100)::text
        || ',"buyer":' || to_json(f.buyer)::text || ',"txHash":' || coalesce(to_json(f.tx_hash)::text, 'null')
        || ',"verified":' || CASE WHEN f.verified_at IS NULL THEN 'false' ELSE 'true' END || ',"createdAt":' || f.created_at::text || '}',
      ',' ORDER BY f.created_at, f.id) || ']'
      FROM refunds f WHERE f.wallet = r.wallet AND f.receipt_id = r.id), '[]'))
$$;
