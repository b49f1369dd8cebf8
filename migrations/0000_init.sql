CREATE TABLE "inventory_items" (
	"wallet" text NOT NULL,
	"sku" text NOT NULL,
	"id" text NOT NULL,
	"name" text NOT NULL,
	"description" text,
	"category" text,
	"price_cents" bigint NOT NULL,
	"stock_qty" integer NOT NULL,
	"taxable" boolean NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "inventory_items_wallet_sku_pk" PRIMARY KEY("wallet","sku")
);
--> statement-breakpoint
CREATE TABLE "journal_applied" (
	"entry_id" text PRIMARY KEY NOT NULL,
	"applied_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "receipt_status_history" (
	"seq" bigserial PRIMARY KEY NOT NULL,
	"wallet" text NOT NULL,
	"receipt_id" text NOT NULL,
	"status" text NOT NULL,
	"source" text NOT NULL,
	"note" text,
	"at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "receipts" (
	"wallet" text NOT NULL,
	"id" text NOT NULL,
	"pay_token" text NOT NULL,
	"source" text NOT NULL,
	"status" text NOT NULL,
	"currency" text NOT NULL,
	"total_cents" bigint NOT NULL,
	"line_items" jsonb NOT NULL,
	"jurisdiction_code" text,
	"tax_rate_ppm" integer,
	"tax_components" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"transaction_hash" text,
	"transaction_timestamp" bigint,
	"request_hash" text NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "receipts_wallet_id_pk" PRIMARY KEY("wallet","id")
);
--> statement-breakpoint
CREATE TABLE "shop_configs" (
	"wallet" text PRIMARY KEY NOT NULL,
	"name" text,
	"processing_fee_bps" integer DEFAULT 0 NOT NULL,
	"tax_jurisdictions" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"allowed_embed_origins" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "split_configs" (
	"wallet" text PRIMARY KEY NOT NULL,
	"address" text,
	"recipients" jsonb NOT NULL,
	"created_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "split_transactions" (
	"wallet" text NOT NULL,
	"id" text NOT NULL,
	"kind" text NOT NULL,
	"split_address" text NOT NULL,
	"counterparty" text NOT NULL,
	"receipt_id" text,
	"amount_units" text NOT NULL,
	"fee_units" text NOT NULL,
	"currency" text NOT NULL,
	"status" text NOT NULL,
	"transaction_hash" text NOT NULL,
	"log_index" integer NOT NULL,
	"block_number" bigint NOT NULL,
	"timestamp" bigint NOT NULL,
	CONSTRAINT "split_transactions_wallet_id_pk" PRIMARY KEY("wallet","id")
);
--> statement-breakpoint
CREATE TABLE "subscription_keys" (
	"key_hash" text PRIMARY KEY NOT NULL,
	"subscription_id" text NOT NULL,
	"slot" text NOT NULL,
	"prefix" text NOT NULL,
	"created_at" bigint NOT NULL,
	"revoked_at" bigint
);
--> statement-breakpoint
CREATE TABLE "subscriptions" (
	"id" text PRIMARY KEY NOT NULL,
	"wallet" text NOT NULL,
	"name" text NOT NULL,
	"product" text NOT NULL,
	"scopes" jsonb NOT NULL,
	"rate_limit_per_minute" integer NOT NULL,
	"status" text NOT NULL,
	"created_at" bigint NOT NULL,
	"revoked_at" bigint
);
--> statement-breakpoint
CREATE TABLE "users" (
	"wallet" text PRIMARY KEY NOT NULL,
	"display_name" text DEFAULT '' NOT NULL,
	"pfp_url" text,
	"xp" bigint DEFAULT 0 NOT NULL,
	"live" boolean DEFAULT false NOT NULL,
	"space_public" boolean DEFAULT false NOT NULL,
	"space_url" text,
	"platform" text,
	"live_since" bigint,
	"last_seen" bigint,
	"last_heartbeat" bigint,
	"domains" text[] DEFAULT '{}'::text[] NOT NULL,
	"platforms" text[] DEFAULT '{}'::text[] NOT NULL,
	"languages" text[] DEFAULT '{}'::text[] NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
ALTER TABLE "subscription_keys" ADD CONSTRAINT "subscription_keys_subscription_id_subscriptions_id_fk" FOREIGN KEY ("subscription_id") REFERENCES "public"."subscriptions"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "inventory_items_wallet_id_idx" ON "inventory_items" USING btree ("wallet","id");--> statement-breakpoint
CREATE INDEX "receipt_status_history_receipt_idx" ON "receipt_status_history" USING btree ("wallet","receipt_id","seq");--> statement-breakpoint
CREATE UNIQUE INDEX "receipts_pay_token_idx" ON "receipts" USING btree ("pay_token");--> statement-breakpoint
CREATE INDEX "receipts_wallet_created_idx" ON "receipts" USING btree ("wallet","created_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE UNIQUE INDEX "split_transactions_log_idx" ON "split_transactions" USING btree ("transaction_hash","log_index");--> statement-breakpoint
CREATE INDEX "split_transactions_wallet_time_idx" ON "split_transactions" USING btree ("wallet","timestamp" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "subscription_keys_subscription_idx" ON "subscription_keys" USING btree ("subscription_id","slot");--> statement-breakpoint
CREATE INDEX "subscriptions_wallet_idx" ON "subscriptions" USING btree ("wallet");--> statement-breakpoint
CREATE INDEX "users_xp_idx" ON "users" USING btree ("xp" DESC NULLS LAST,"wallet");--> statement-breakpoint
CREATE INDEX "users_heartbeat_idx" ON "users" USING btree ("last_heartbeat" DESC NULLS LAST);