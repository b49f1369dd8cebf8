CREATE TABLE "split_versions" (
	"wallet" text NOT NULL,
	"version" integer NOT NULL,
	"address" text,
	"recipients" jsonb NOT NULL,
	"starts_at" bigint NOT NULL,
	"created_at" bigint NOT NULL,
	CONSTRAINT "split_versions_wallet_version_pk" PRIMARY KEY("wallet","version")
);
--> statement-breakpoint
ALTER TABLE "receipts" ADD COLUMN "pay_split" text;--> statement-breakpoint
ALTER TABLE "split_configs" ADD COLUMN "version" integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE "split_configs" ADD COLUMN "starts_at" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "split_versions_address_idx" ON "split_versions" USING btree ("address");