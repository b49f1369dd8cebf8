-- Units named in a receipt's answer (DESIGN.md "Integrator API", Units; docs/decisions.md "Units"):
-- beside the spec's fields, every token amount again as a decimal string of base units in a field
-- ending BaseUnits, with the token's decimals (USDC: 6; 10,000 base units make a cent), and every
-- USD amount in a field ending Usd. The token's address is joined when read (the chain's, as the
-- payer is: src/db/receipt-views.ts). Otherwise 0017's definitions (0018's refunds member).
CREATE OR REPLACE FUNCTION receipt_state_json(r receipts, refunded_cents numeric) RETURNS text LANGUAGE sql STABLE AS $$
  SELECT ',"status":' || to_json(r.status)::text
    || ',"exception":' || coalesce(to_json(r.exception)::text, 'null')
    || ',"expiresAt":' || r.expires_at::text
    || ',"amountPaid":"' || r.paid_units || '"'
    || ',"amountDue":"' || greatest(r.total_cents::numeric * 10000 - r.paid_units::numeric, 0)::text || '"'
    || ',"refundedUsd":' || trim_scale(refunded_cents / 100)::text
    || ',"totalBaseUnits":"' || (r.total_cents::numeric * 10000)::text || '"'
    || ',"amountPaidBaseUnits":"' || r.paid_units || '"'
    || ',"amountDueBaseUnits":"' || greatest(r.total_cents::numeric * 10000 - r.paid_units::numeric, 0)::text || '"'
    || ',"decimals":6'
$$;--> statement-breakpoint
-- Each refund also as amountUsd (its spec name is usd, in the admin refund entry).
CREATE OR REPLACE FUNCTION receipt_detail_json(r receipts) RETURNS text LANGUAGE sql STABLE AS $$
  SELECT receipt_detail_json(r,
    coalesce((SELECT '[' || string_agg(receipt_history_entry_json(h.status, h.at, h.source, h.count), ',' ORDER BY h.seq) || ']'
      FROM receipt_status_history h WHERE h.wallet = r.wallet AND h.receipt_id = r.id), '[]'),
    coalesce((SELECT '[' || string_agg('{"id":' || to_json(f.id)::text || ',"usd":' || trim_scale(f.amount_cents::numeric / 100)::text
        || ',"amountUsd":' || trim_scale(f.amount_cents::numeric / 100)::text
        || ',"buyer":' || to_json(f.buyer)::text || ',"txHash":' || coalesce(to_json(f.tx_hash)::text, 'null')
        || ',"verified":' || CASE WHEN f.verified_at IS NULL THEN 'false' ELSE 'true' END
        || ',"verification":"' || CASE WHEN f.verified_at IS NOT NULL THEN 'verified'
             WHEN f.log_position IS NULL THEN 'none'
             WHEN f.removed_at IS NOT NULL THEN 'removed'
             ELSE 'confirming' END || '"'
        || ',"createdAt":' || f.created_at::text || '}',
      ',' ORDER BY f.created_at, f.id) || ']'
      FROM refunds f WHERE f.wallet = r.wallet AND f.receipt_id = r.id), '[]'))
$$;--> statement-breakpoint
-- Stored views rendered again by the update trigger (0010), with the new members.
UPDATE receipts SET state_json = NULL WHERE state_json IS NOT NULL OR detail_json IS NOT NULL;
