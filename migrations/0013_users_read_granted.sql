-- users:read is granted only by a superadmin (DESIGN.md "Security settings"). Subscriptions
-- issued before that rule, by whoever created them, lose it; a superadmin grants it again.
UPDATE "subscriptions" SET "scopes" = "scopes" - 'users:read' WHERE "scopes" ? 'users:read';
