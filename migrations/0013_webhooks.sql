-- Outbound webhooks (src/modules/webhooks): subscriptions, the fan-out position in the outbox of
-- each workspace, one delivery per (fact, subscription) and every attempt of it. The webhooks module
-- owns every table here.

CREATE TABLE webhook_subscriptions (
  id text PRIMARY KEY,
  -- List order and cursor keyset; never shown to clients.
  seq bigserial UNIQUE,
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  url text NOT NULL,
  events text[] NOT NULL,
  secret text NOT NULL,
  -- False after a 410 answer (the receiver said it is gone for good) or a PATCH.
  enabled boolean NOT NULL DEFAULT true,
  disabled_reason text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX webhook_subscriptions_workspace_idx ON webhook_subscriptions (workspace_id, seq);

-- The last outbox seq fanned out per workspace; advanced in the transaction that creates the
-- deliveries of the facts up to it, so each fact is fanned out exactly once.
CREATE TABLE webhook_cursors (
  workspace_id uuid PRIMARY KEY REFERENCES workspaces (id) ON DELETE CASCADE,
  last_seq bigint NOT NULL DEFAULT 0
);

CREATE TABLE webhook_deliveries (
  id text PRIMARY KEY,
  seq bigserial UNIQUE,
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  subscription_id text NOT NULL REFERENCES webhook_subscriptions (id) ON DELETE CASCADE,
  -- The outbox fact (evt_…); its body is frozen here so a redelivery sends the same bytes' content.
  event_id text NOT NULL,
  event_type text NOT NULL,
  body jsonb NOT NULL,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed', 'dead')),
  attempts integer NOT NULL DEFAULT 0,
  last_status_code integer,
  last_error text,
  last_attempt_at timestamptz,
  next_attempt_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (subscription_id, event_id)
);

CREATE INDEX webhook_deliveries_subscription_idx ON webhook_deliveries (subscription_id, seq);

CREATE TABLE webhook_attempts (
  delivery_id text NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
  n integer NOT NULL,
  status_code integer,
  error text,
  duration_ms integer NOT NULL,
  attempted_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (delivery_id, n)
);
