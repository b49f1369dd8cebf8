-- GET /api/events: a merchant's events newest first, keyset-paginated on (created_at, id).
CREATE INDEX "webhook_events_wallet_created_idx" ON "webhook_events" USING btree ("wallet","created_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
-- events:read joins the default product (full, "every developer scope"). A subscription of it
-- that holds every developer scope it had before (a key issued as "everything") gains the new
-- one, so it keeps meaning everything; one issued with a narrower list keeps its list.
UPDATE "subscriptions" SET "scopes" = "scopes" || '["events:read"]'::jsonb
WHERE "product" = 'full'
  AND "scopes" @> '["inventory:read","inventory:write","orders:create","receipts:read","receipts:write","shop:read","split:read"]'::jsonb
  AND NOT "scopes" ? 'events:read';
