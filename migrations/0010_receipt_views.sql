-- A receipt as the API reads it, rendered by the database when it changes rather than on every read
-- (docs/decisions.md, "Receipt reads"). state_json: the members after the brand name on the list and
-- the detail (status, payment state, refunded sum). detail_json: the detail's members after the
-- payer (tax, transaction, status history, refunds). The brand name, payment address and payer
-- are joined when read: they depend on the shop, the chain worker and the chain's token.
ALTER TABLE "receipts" ADD COLUMN "state_json" text;--> statement-breakpoint
ALTER TABLE "receipts" ADD COLUMN "detail_json" text;--> statement-breakpoint
-- The renderings, used by the triggers below and by reads of rows stored without them (inserted
-- before this migration, or directly). 10,000 token base units make a cent (USDC has 6 decimals).
CREATE FUNCTION receipt_state_json(r receipts) RETURNS text LANGUAGE sql STABLE AS $$
  SELECT ',"status":' || to_json(r.status)::text
    || ',"exception":' || coalesce(to_json(r.exception)::text, 'null')
    || ',"expiresAt":' || r.expires_at::text
    || ',"amountPaid":"' || r.paid_units || '"'
    || ',"amountDue":"' || greatest(r.total_cents::numeric * 10000 - r.paid_units::numeric, 0)::text || '"'
    || ',"refundedUsd":' || trim_scale(coalesce((SELECT sum(f.amount_cents) FROM refunds f
         WHERE f.wallet = r.wallet AND f.receipt_id = r.id), 0)::numeric / 100)::text
$$;--> statement-breakpoint
-- "count" only on an entry recorded more than once (repeated tracking statuses).
CREATE FUNCTION receipt_detail_json(r receipts) RETURNS text LANGUAGE sql STABLE AS $$
  SELECT ',"jurisdictionCode":' || coalesce(to_json(r.jurisdiction_code)::text, 'null')
    || ',"taxRate":' || coalesce(trim_scale(r.tax_rate_ppm::numeric / 1000000)::text, '0')
    || ',"taxComponents":' || coalesce((SELECT '[' || string_agg(to_json(c.v)::text, ',' ORDER BY c.n) || ']'
         FROM jsonb_array_elements_text(r.tax_components) WITH ORDINALITY AS c(v, n)), '[]')
    || CASE WHEN r.transaction_hash IS NULL THEN '' ELSE ',"transactionHash":' || to_json(r.transaction_hash)::text END
    || CASE WHEN r.transaction_timestamp IS NULL THEN '' ELSE ',"transactionTimestamp":' || r.transaction_timestamp::text END
    || ',"statusHistory":' || coalesce((SELECT '[' || string_agg('{"status":' || to_json(h.status)::text || ',"at":' || h.at::text
           || ',"source":' || to_json(h.source)::text || CASE WHEN h.count > 1 THEN ',"count":' || h.count::text ELSE '' END || '}',
         ',' ORDER BY h.seq) || ']'
         FROM receipt_status_history h WHERE h.wallet = r.wallet AND h.receipt_id = r.id), '[]')
    || ',"refunds":' || coalesce((SELECT '[' || string_agg('{"id":' || to_json(f.id)::text || ',"usd":' || trim_scale(f.amount_cents::numeric / 100)::text
           || ',"buyer":' || to_json(f.buyer)::text || ',"txHash":' || coalesce(to_json(f.tx_hash)::text, 'null')
           || ',"verified":' || CASE WHEN f.verified_at IS NULL THEN 'false' ELSE 'true' END || ',"createdAt":' || f.created_at::text || '}',
         ',' ORDER BY f.created_at, f.id) || ']'
         FROM refunds f WHERE f.wallet = r.wallet AND f.receipt_id = r.id), '[]')
$$;--> statement-breakpoint
-- Every change of a receipt's row renders both again. The functions' queries run on a snapshot
-- taken when the trigger runs, after this transaction's earlier statements and after any
-- transaction that held the row's lock before this update got it.
CREATE FUNCTION receipts_render_views() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.state_json := receipt_state_json(NEW);
  NEW.detail_json := receipt_detail_json(NEW);
  RETURN NEW;
END
$$;--> statement-breakpoint
CREATE TRIGGER receipts_render_views BEFORE UPDATE ON receipts FOR EACH ROW EXECUTE FUNCTION receipts_render_views();--> statement-breakpoint
-- A change to a receipt's history or refunds updates its row, which renders its views again.
CREATE FUNCTION receipt_views_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    UPDATE receipts SET state_json = NULL WHERE wallet = OLD.wallet AND id = OLD.receipt_id;
  ELSE
    UPDATE receipts SET state_json = NULL WHERE wallet = NEW.wallet AND id = NEW.receipt_id;
  END IF;
  RETURN NULL;
END
$$;--> statement-breakpoint
-- The entry a receipt is created with ('api', 'order' or 'terminal') is in the views its creating
-- statement stores (src/db/receipt-store.ts): that statement inserts both, and must not pay for an
-- update of every receipt it creates. A receipt inserted without views is rendered when read.
CREATE TRIGGER receipt_status_history_added AFTER INSERT ON receipt_status_history FOR EACH ROW
  WHEN (NEW.source NOT IN ('api', 'order', 'terminal')) EXECUTE FUNCTION receipt_views_changed();--> statement-breakpoint
CREATE TRIGGER receipt_status_history_changed AFTER UPDATE OR DELETE ON receipt_status_history FOR EACH ROW EXECUTE FUNCTION receipt_views_changed();--> statement-breakpoint
CREATE TRIGGER refunds_changed AFTER INSERT OR UPDATE OR DELETE ON refunds FOR EACH ROW EXECUTE FUNCTION receipt_views_changed();
