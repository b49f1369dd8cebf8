CREATE TABLE "idempotency_keys" (
	"scope" text NOT NULL,
	"key" text NOT NULL,
	"request_hash" text NOT NULL,
	"status" integer NOT NULL,
	"content_type" text,
	"body" text NOT NULL,
	"created_at" bigint NOT NULL,
	CONSTRAINT "idempotency_keys_scope_key_pk" PRIMARY KEY("scope","key")
);
--> statement-breakpoint
CREATE TABLE "rejected_writes" (
	"write_id" text PRIMARY KEY NOT NULL,
	"wallet" text NOT NULL,
	"kind" text NOT NULL,
	"receipt_id" text,
	"reason" text NOT NULL,
	"entry" jsonb NOT NULL,
	"acknowledged_at" bigint NOT NULL,
	"rejected_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "write_ids" (
	"write_id" text PRIMARY KEY NOT NULL,
	"wallet" text,
	"kind" text NOT NULL,
	"ref" text,
	"request_hash" text,
	"at" bigint NOT NULL
);
--> statement-breakpoint
-- Journal entries already applied keep their claim: their entry id is their write id.
INSERT INTO "write_ids" ("write_id", "kind", "at") SELECT "entry_id", 'journal', "applied_at" FROM "journal_applied";--> statement-breakpoint
DROP TABLE "journal_applied" CASCADE;--> statement-breakpoint
ALTER TABLE "receipts" ADD COLUMN "write_id" text;--> statement-breakpoint
CREATE INDEX "idempotency_keys_created_idx" ON "idempotency_keys" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "rejected_writes_wallet_idx" ON "rejected_writes" USING btree ("wallet","rejected_at" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "write_ids_at_idx" ON "write_ids" USING btree ("at");