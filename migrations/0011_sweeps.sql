CREATE TABLE "chain_nonces" (
	"account" text PRIMARY KEY NOT NULL,
	"next" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "sweeps" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"account" text NOT NULL,
	"nonce" bigint NOT NULL,
	"wallet" text NOT NULL,
	"receipt_id" text NOT NULL,
	"pay_address" text NOT NULL,
	"token" text NOT NULL,
	"target" text NOT NULL,
	"data" text NOT NULL,
	"gas" bigint NOT NULL,
	"amount_units" text NOT NULL,
	"state" text NOT NULL,
	"attempts" jsonb NOT NULL,
	"raw" text NOT NULL,
	"at_fee_cap" boolean DEFAULT false NOT NULL,
	"mined_hash" text,
	"mined_block" bigint,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX "sweeps_pending_address_idx" ON "sweeps" USING btree ("pay_address") WHERE "sweeps"."state" = 'pending';--> statement-breakpoint
CREATE UNIQUE INDEX "sweeps_pending_nonce_idx" ON "sweeps" USING btree ("account","nonce") WHERE "sweeps"."state" = 'pending';--> statement-breakpoint
CREATE INDEX "sweeps_address_idx" ON "sweeps" USING btree ("pay_address","id");