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
CREATE UNIQUE INDEX "split_versions_address_idx" ON "split_versions" USING btree ("address");--> statement-breakpoint
-- split_configs holds the current version; every change of it is written to split_versions here,
-- so each writer of split_configs (set-up, a new version, the dev chain's redeploy) keeps the history.
CREATE FUNCTION split_configs_keep_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO split_versions (wallet, version, address, recipients, starts_at, created_at)
  VALUES (NEW.wallet, NEW.version, NEW.address, NEW.recipients, NEW.starts_at,
          CASE WHEN NEW.version = 1 THEN NEW.created_at ELSE NEW.starts_at END)
  ON CONFLICT (wallet, version) DO UPDATE SET address = EXCLUDED.address, recipients = EXCLUDED.recipients, starts_at = EXCLUDED.starts_at;
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE TRIGGER split_configs_keep_version AFTER INSERT OR UPDATE ON split_configs FOR EACH ROW EXECUTE FUNCTION split_configs_keep_version();--> statement-breakpoint
INSERT INTO split_versions (wallet, version, address, recipients, starts_at, created_at)
  SELECT wallet, 1, address, recipients, 0, created_at FROM split_configs;--> statement-breakpoint
-- Every address stored so far commits to the merchant's one split.
UPDATE receipts r SET pay_split = s.address FROM split_configs s WHERE r.wallet = s.wallet AND r.pay_address IS NOT NULL;
