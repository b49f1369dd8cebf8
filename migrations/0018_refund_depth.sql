DROP INDEX "refunds_transfer_idx";--> statement-breakpoint
ALTER TABLE "refunds" ADD COLUMN "log_position" integer;--> statement-breakpoint
ALTER TABLE "refunds" ADD COLUMN "block_number" bigint;--> statement-breakpoint
ALTER TABLE "refunds" ADD COLUMN "block_hash" text;--> statement-breakpoint
ALTER TABLE "refunds" ADD COLUMN "removed_at" bigint;--> statement-breakpoint
CREATE UNIQUE INDEX "refunds_transfer_position_idx" ON "refunds" USING btree ("tx_hash","log_position");--> statement-breakpoint
CREATE INDEX "refunds_proof_idx" ON "refunds" USING btree ("block_number") WHERE "refunds"."log_position" is not null;
--> statement-breakpoint
-- A refund's verification in the receipt detail (DESIGN "Refunds"): none (no txHash, or a transfer
-- not from the merchant's own addresses), confirming (its transfer is fewer than CONFIRMATIONS
-- blocks deep), verified, removed (a reorganisation removed its transfer). Refunds verified before
-- this migration (log_index set, no log_position) stay verified. Only the refunds member changes
-- (0017's definition otherwise).
CREATE OR REPLACE FUNCTION receipt_detail_json(r receipts) RETURNS text LANGUAGE sql STABLE AS $$
  SELECT receipt_detail_json(r,
    coalesce((SELECT '[' || string_agg(receipt_history_entry_json(h.status, h.at, h.source, h.count), ',' ORDER BY h.seq) || ']'
      FROM receipt_status_history h WHERE h.wallet = r.wallet AND h.receipt_id = r.id), '[]'),
    coalesce((SELECT '[' || string_agg('{"id":' || to_json(f.id)::text || ',"usd":' || trim_scale(f.amount_cents::numeric / 100)::text
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
-- Receipts with refunds render their detail again, with the new member. Refunds verified before
-- this migration keep the block log index they were verified by; from now on the transfer is known
-- by its place in its transaction (refunds_transfer_position_idx).
UPDATE receipts r SET state_json = NULL WHERE EXISTS (SELECT 1 FROM refunds f WHERE f.wallet = r.wallet AND f.receipt_id = r.id);
