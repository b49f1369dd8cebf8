CREATE TABLE "chain_status" (
	"name" text PRIMARY KEY NOT NULL,
	"data" jsonb NOT NULL,
	"updated_at" bigint NOT NULL
);
