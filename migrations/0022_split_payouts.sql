CREATE TABLE "split_payouts" (
	"wallet" text PRIMARY KEY NOT NULL,
	"threshold_cents" bigint NOT NULL,
	"interval_hours" integer NOT NULL,
	"last_run_at" bigint,
	"updated_at" bigint NOT NULL
);
