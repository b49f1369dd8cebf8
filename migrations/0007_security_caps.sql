CREATE TABLE "usage_counters" (
	"wallet" text NOT NULL,
	"name" text NOT NULL,
	"n" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "usage_counters_wallet_name_pk" PRIMARY KEY("wallet","name")
);
--> statement-breakpoint
-- The caps count what exists already: active subscriptions and webhook endpoints per merchant.
-- A merchant already over a cap keeps what it has and can add nothing until it is back under.
INSERT INTO "usage_counters" ("wallet", "name", "n")
SELECT "wallet", 'subscriptions', count(*)::integer FROM "subscriptions" WHERE "status" = 'active' GROUP BY "wallet";--> statement-breakpoint
INSERT INTO "usage_counters" ("wallet", "name", "n")
SELECT "wallet", 'webhook_endpoints', count(*)::integer FROM "webhook_endpoints" WHERE "disabled_at" IS NULL GROUP BY "wallet";--> statement-breakpoint
ALTER TABLE "receipt_status_history" ADD COLUMN "count" integer DEFAULT 1 NOT NULL;--> statement-breakpoint
-- Repeated tracking statuses collapse into the first row of each (receipt, status), which keeps
-- the number of rows it stands for; the unique index below then holds one row per tracking status.
UPDATE "receipt_status_history" AS h SET "count" = d."n"
FROM (
	SELECT min("seq") AS "keep", count(*)::integer AS "n" FROM "receipt_status_history"
	WHERE "source" = 'tracking' GROUP BY "wallet", "receipt_id", "status" HAVING count(*) > 1
) AS d
WHERE h."seq" = d."keep";--> statement-breakpoint
DELETE FROM "receipt_status_history" AS h
WHERE h."source" = 'tracking' AND EXISTS (
	SELECT 1 FROM "receipt_status_history" AS k
	WHERE k."source" = 'tracking' AND k."wallet" = h."wallet" AND k."receipt_id" = h."receipt_id"
		AND k."status" = h."status" AND k."seq" < h."seq"
);--> statement-breakpoint
CREATE INDEX "auth_nonces_expires_idx" ON "auth_nonces" USING btree ("expires_at");--> statement-breakpoint
CREATE UNIQUE INDEX "receipt_status_history_tracking_idx" ON "receipt_status_history" USING btree ("wallet","receipt_id","status") WHERE "receipt_status_history"."source" = 'tracking';--> statement-breakpoint
CREATE INDEX "sessions_expires_idx" ON "sessions" USING btree ("expires_at");
