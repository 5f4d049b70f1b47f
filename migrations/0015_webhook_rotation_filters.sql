-- Secret rotation and segment filters of webhook subscriptions (src/modules/webhooks, docs/webhooks.md).
--
-- previous_secret: the secret a rotation replaced, still signing every delivery (beside the new one)
-- until previous_secret_expires_at; both are NULL outside a grace period. A row whose grace has
-- passed keeps them until the next rotation or secret change: readers compare the time.
ALTER TABLE webhook_subscriptions ADD COLUMN previous_secret text;
ALTER TABLE webhook_subscriptions ADD COLUMN previous_secret_expires_at timestamptz;
ALTER TABLE webhook_subscriptions ADD CONSTRAINT webhook_subscriptions_previous_secret_check
  CHECK ((previous_secret IS NULL) = (previous_secret_expires_at IS NULL));

-- Segment ids whose segment.entered / segment.exited facts the subscription wants; empty means all
-- of them. Not a foreign key: segments belong to the segments module, and a deleted segment simply
-- matches no fact any more.
ALTER TABLE webhook_subscriptions ADD COLUMN segments text[] NOT NULL DEFAULT '{}';
