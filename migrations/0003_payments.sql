CREATE TABLE "chain_cursors" (
	"name" text PRIMARY KEY NOT NULL,
	"block" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "receipt_payments" (
	"wallet" text NOT NULL,
	"receipt_id" text NOT NULL,
	"transaction_hash" text NOT NULL,
	"log_index" integer,
	"block_number" bigint,
	"block_hash" text,
	"amount_units" text,
	"payer" text,
	"status" text NOT NULL,
	"reason" text,
	"source" text NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "receipt_payments_wallet_receipt_id_transaction_hash_pk" PRIMARY KEY("wallet","receipt_id","transaction_hash")
);
--> statement-breakpoint
CREATE UNIQUE INDEX "receipt_payments_transfer_idx" ON "receipt_payments" USING btree ("transaction_hash","log_index");--> statement-breakpoint
CREATE INDEX "receipt_payments_open_idx" ON "receipt_payments" USING btree ("status","updated_at");