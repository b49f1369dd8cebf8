-- The expiry index holds only receipts that can still expire: their status awaits money
-- (isAwaitingMoney). An unpaid receipt in any other status (only another token arrived, refunded
-- unpaid) never expires, and each expiry pass read every such row while the index held them.
DROP INDEX "receipts_expiry_idx";--> statement-breakpoint
CREATE INDEX "receipts_expiry_idx" ON "receipts" USING btree ("expires_at") WHERE "receipts"."expired_at" is null and "receipts"."paid_units" = '0' and ("receipts"."status" in ('pending', 'generated', 'link_opened', 'buyer_logged_in', 'checkout_initialized', 'checkout_success') or starts_with("receipts"."status", 'refund_'));
