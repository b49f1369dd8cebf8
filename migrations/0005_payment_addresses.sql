CREATE TABLE "chain_blocks" (
	"cursor" text NOT NULL,
	"number" bigint NOT NULL,
	"hash" text NOT NULL,
	CONSTRAINT "chain_blocks_cursor_number_pk" PRIMARY KEY("cursor","number")
);
--> statement-breakpoint
CREATE TABLE "payment_hints" (
	"wallet" text NOT NULL,
	"receipt_id" text NOT NULL,
	"transaction_hash" text NOT NULL,
	"created_at" bigint NOT NULL,
	"checked_at" bigint DEFAULT 0 NOT NULL,
	"resolved_at" bigint,
	"outcome" text,
	CONSTRAINT "payment_hints_wallet_receipt_id_transaction_hash_pk" PRIMARY KEY("wallet","receipt_id","transaction_hash")
);
--> statement-breakpoint
CREATE TABLE "receipt_transfers" (
	"transaction_hash" text NOT NULL,
	"log_index" integer NOT NULL,
	"wallet" text NOT NULL,
	"receipt_id" text NOT NULL,
	"kind" text NOT NULL,
	"token" text NOT NULL,
	"from_address" text NOT NULL,
	"amount_units" text NOT NULL,
	"block_number" bigint NOT NULL,
	"block_hash" text NOT NULL,
	"timestamp" bigint NOT NULL,
	CONSTRAINT "receipt_transfers_transaction_hash_log_index_pk" PRIMARY KEY("transaction_hash","log_index")
);
--> statement-breakpoint
CREATE TABLE "receipt_watch" (
	"wallet" text NOT NULL,
	"receipt_id" text NOT NULL,
	"sweep_tx" text,
	"sweep_sent_at" bigint,
	"since" bigint NOT NULL,
	CONSTRAINT "receipt_watch_wallet_receipt_id_pk" PRIMARY KEY("wallet","receipt_id")
);
--> statement-breakpoint
DROP TABLE "receipt_payments" CASCADE;--> statement-breakpoint
ALTER TABLE "receipts" ADD COLUMN "pay_address" text;--> statement-breakpoint
ALTER TABLE "receipts" ADD COLUMN "expires_at" bigint;--> statement-breakpoint
-- Receipts stored before expiry existed get the default time to live (RECEIPT_TTL_MINUTES, 60).
UPDATE "receipts" SET "expires_at" = "created_at" + 3600000;--> statement-breakpoint
ALTER TABLE "receipts" ALTER COLUMN "expires_at" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "receipts" ADD COLUMN "exception" text;--> statement-breakpoint
ALTER TABLE "receipts" ADD COLUMN "paid_units" text DEFAULT '0' NOT NULL;--> statement-breakpoint
ALTER TABLE "receipts" ADD COLUMN "expired_at" bigint;--> statement-breakpoint
-- Receipts the first payment design completed were paid in full; their payment addresses are
-- filled in by the chain worker (src/payments/pay-address.ts), which needs the factory's address.
UPDATE "receipts" SET "paid_units" = ("total_cents" * 10000)::text WHERE "status" IN ('completed', 'recipient_validated', 'refunded');--> statement-breakpoint
CREATE INDEX "payment_hints_open_idx" ON "payment_hints" USING btree ("checked_at") WHERE "payment_hints"."resolved_at" is null;--> statement-breakpoint
CREATE INDEX "receipt_transfers_receipt_idx" ON "receipt_transfers" USING btree ("wallet","receipt_id");--> statement-breakpoint
CREATE INDEX "receipt_transfers_block_idx" ON "receipt_transfers" USING btree ("block_number");--> statement-breakpoint
CREATE UNIQUE INDEX "receipts_pay_address_idx" ON "receipts" USING btree ("pay_address");--> statement-breakpoint
CREATE INDEX "receipts_unaddressed_idx" ON "receipts" USING btree ("wallet") WHERE "receipts"."pay_address" is null;--> statement-breakpoint
CREATE INDEX "receipts_expiry_idx" ON "receipts" USING btree ("expires_at") WHERE "receipts"."expired_at" is null and "receipts"."paid_units" = '0';