-- Unified profiles and the transactional outbox. Identity graph, lineage and dead letters follow in
-- their own migration; orders and products in theirs.

CREATE TABLE profiles (
  id uuid PRIMARY KEY,
  -- List order and cursor keyset; never shown to clients.
  seq bigserial UNIQUE,
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  email text,
  first_name text,
  last_name text,
  attributes jsonb NOT NULL DEFAULT '{}'::jsonb,
  -- Event time of the last write per field path ("email", "attributes.plan.tier", …): a late event
  -- older than the stored value cannot overwrite it.
  field_times jsonb NOT NULL DEFAULT '{}'::jsonb,
  total_spend numeric(18, 2) NOT NULL DEFAULT 0,
  rfm_segment text,
  churn_risk_score double precision,
  predicted_clv numeric(18, 2),
  -- Set when this profile was merged into another; reads of this id then show the survivor.
  merged_into uuid REFERENCES profiles (id) ON DELETE SET NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX profiles_list_idx ON profiles (workspace_id, seq) WHERE merged_into IS NULL;
CREATE INDEX profiles_email_idx ON profiles (workspace_id, email) WHERE merged_into IS NULL;

-- Facts written in the same transaction that causes them (profile.created, profile.merged,
-- order.completed, …), consumed in seq order by the webhook dispatcher and segment refresh.
CREATE TABLE outbox (
  seq bigserial PRIMARY KEY,
  id text NOT NULL UNIQUE,
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  type text NOT NULL,
  data jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX outbox_workspace_idx ON outbox (workspace_id, seq);
