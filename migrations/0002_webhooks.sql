CREATE TABLE "leases" (
	"name" text PRIMARY KEY NOT NULL,
	"holder" text NOT NULL,
	"expires_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook_attempts" (
	"seq" bigserial PRIMARY KEY NOT NULL,
	"wallet" text NOT NULL,
	"delivery_id" text NOT NULL,
	"at" bigint NOT NULL,
	"status_code" integer,
	"error" text,
	"duration_ms" integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook_deliveries" (
	"wallet" text NOT NULL,
	"id" text NOT NULL,
	"event_id" text NOT NULL,
	"endpoint_id" text NOT NULL,
	"status" text NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" bigint NOT NULL,
	"last_status_code" integer,
	"last_error" text,
	"created_at" bigint NOT NULL,
	"delivered_at" bigint,
	CONSTRAINT "webhook_deliveries_wallet_id_pk" PRIMARY KEY("wallet","id")
);
--> statement-breakpoint
CREATE TABLE "webhook_events" (
	"wallet" text NOT NULL,
	"id" text NOT NULL,
	"type" text NOT NULL,
	"payload" jsonb NOT NULL,
	"dedupe_key" text NOT NULL,
	"created_at" bigint NOT NULL,
	CONSTRAINT "webhook_events_wallet_id_pk" PRIMARY KEY("wallet","id")
);
--> statement-breakpoint
CREATE INDEX "webhook_attempts_delivery_idx" ON "webhook_attempts" USING btree ("wallet","delivery_id","seq");--> statement-breakpoint
CREATE UNIQUE INDEX "webhook_deliveries_event_endpoint_idx" ON "webhook_deliveries" USING btree ("event_id","endpoint_id");--> statement-breakpoint
CREATE INDEX "webhook_deliveries_due_idx" ON "webhook_deliveries" USING btree ("status","next_attempt_at");--> statement-breakpoint
CREATE UNIQUE INDEX "webhook_events_dedupe_idx" ON "webhook_events" USING btree ("wallet","dedupe_key");