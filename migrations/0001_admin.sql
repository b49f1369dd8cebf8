CREATE TABLE "auth_nonces" (
	"nonce" text PRIMARY KEY NOT NULL,
	"wallet" text NOT NULL,
	"issued_at" bigint NOT NULL,
	"expires_at" bigint NOT NULL,
	"used_at" bigint
);
--> statement-breakpoint
CREATE TABLE "refunds" (
	"wallet" text NOT NULL,
	"id" text NOT NULL,
	"receipt_id" text NOT NULL,
	"buyer" text NOT NULL,
	"amount_cents" bigint NOT NULL,
	"items" jsonb NOT NULL,
	"tx_hash" text,
	"created_by" text NOT NULL,
	"created_at" bigint NOT NULL,
	CONSTRAINT "refunds_wallet_id_pk" PRIMARY KEY("wallet","id")
);
--> statement-breakpoint
CREATE TABLE "sessions" (
	"id" text PRIMARY KEY NOT NULL,
	"wallet" text NOT NULL,
	"created_at" bigint NOT NULL,
	"expires_at" bigint NOT NULL,
	"revoked_at" bigint
);
--> statement-breakpoint
CREATE TABLE "user_roles" (
	"wallet" text NOT NULL,
	"role" text NOT NULL,
	"granted_by" text NOT NULL,
	"granted_at" bigint NOT NULL,
	CONSTRAINT "user_roles_wallet_role_pk" PRIMARY KEY("wallet","role")
);
--> statement-breakpoint
CREATE TABLE "webhook_endpoints" (
	"wallet" text NOT NULL,
	"id" text NOT NULL,
	"url" text NOT NULL,
	"events" jsonb NOT NULL,
	"secret" text NOT NULL,
	"created_at" bigint NOT NULL,
	"disabled_at" bigint,
	CONSTRAINT "webhook_endpoints_wallet_id_pk" PRIMARY KEY("wallet","id")
);
--> statement-breakpoint
CREATE INDEX "refunds_receipt_idx" ON "refunds" USING btree ("wallet","receipt_id");--> statement-breakpoint
CREATE INDEX "sessions_wallet_idx" ON "sessions" USING btree ("wallet");