ALTER TABLE "refunds" ADD COLUMN "log_index" integer;--> statement-breakpoint
ALTER TABLE "refunds" ADD COLUMN "amount_units" text;--> statement-breakpoint
ALTER TABLE "refunds" ADD COLUMN "verified_at" bigint;--> statement-breakpoint
CREATE UNIQUE INDEX "refunds_transfer_idx" ON "refunds" USING btree ("tx_hash","log_index");--> statement-breakpoint
-- A split address registered by more than one merchant stays with the first to register it; the
-- later registrations lose the address (their transfers were never theirs) and must configure again.
UPDATE "split_configs" AS s SET "address" = NULL WHERE s."address" IS NOT NULL AND EXISTS (
  SELECT 1 FROM "split_configs" AS o
  WHERE o."address" = s."address" AND (o."created_at" < s."created_at" OR (o."created_at" = s."created_at" AND o."wallet" < s."wallet"))
);--> statement-breakpoint
CREATE UNIQUE INDEX "split_configs_address_idx" ON "split_configs" USING btree ("address");