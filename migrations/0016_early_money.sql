-- Money that reached a payment address before the address was stored is looked for once per
-- address (src/payments/early-money.ts); receipts_early_money_idx holds the addresses still to look at.
ALTER TABLE "receipts" ADD COLUMN "early_money_checked_at" bigint;--> statement-breakpoint
CREATE INDEX "receipts_early_money_idx" ON "receipts" USING btree ("wallet") WHERE "receipts"."pay_address" is not null and "receipts"."early_money_checked_at" is null;--> statement-breakpoint
-- Receipts that completed or were refunded hold nothing at their address any more (sweeps move the
-- whole balance): nothing to look for. The others are looked at once by the chain worker.
UPDATE "receipts" SET "early_money_checked_at" = "updated_at" WHERE "pay_address" IS NOT NULL AND "status" IN ('completed', 'refunded');
