-- Accounts: the traits of the groups (companies, teams) that Segment-style `group` calls name
-- (docs/ingestion.md). Kept for account-level use later; one row per group id and workspace.
CREATE TABLE accounts (
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  group_id text NOT NULL,
  traits jsonb NOT NULL DEFAULT '{}'::jsonb,
  -- The time of the newest call applied: an older call only fills keys the account lacks.
  traits_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, group_id)
);
