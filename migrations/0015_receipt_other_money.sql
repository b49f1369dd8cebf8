ALTER TABLE "receipts" ADD COLUMN "other_money" jsonb;--> statement-breakpoint
ALTER TABLE "receipts" ADD COLUMN "balances_checked_at" bigint;--> statement-breakpoint
ALTER TABLE "receipts" ADD COLUMN "balances_check_due" bigint;--> statement-breakpoint
CREATE INDEX "receipts_balances_due_idx" ON "receipts" USING btree ("balances_check_due") WHERE "receipts"."balances_check_due" is not null;