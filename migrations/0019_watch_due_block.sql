-- The chain worker settles a watched receipt that only waits for depth from the block its newest
-- transfer or sweep is deep on (issue 23: dust to hundreds of addresses costs no pass any work).
ALTER TABLE "receipt_watch" ADD COLUMN "due_block" bigint;--> statement-breakpoint
CREATE INDEX "receipt_watch_due_idx" ON "receipt_watch" USING btree ("due_block");