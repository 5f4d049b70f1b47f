-- Accounts become readable (GET /tenant/accounts, docs/api.md "Accounts"): a listing order, the
-- times of their first and last `group` call, and the profiles that made those calls.
--
-- `seq` pages the listing in creation order (a keyset of one number, like the other listings);
-- an identity column fills the rows already there. The seen times start from the one time the rows
-- kept (the newest call applied), then widen with every call.
ALTER TABLE accounts ADD COLUMN seq bigint GENERATED ALWAYS AS IDENTITY;
CREATE UNIQUE INDEX accounts_page_idx ON accounts (workspace_id, seq);
ALTER TABLE accounts ADD COLUMN first_seen_at timestamptz, ADD COLUMN last_seen_at timestamptz;
UPDATE accounts SET first_seen_at = traits_at, last_seen_at = traits_at;
ALTER TABLE accounts ALTER COLUMN first_seen_at SET NOT NULL, ALTER COLUMN last_seen_at SET NOT NULL;

-- A profile's membership of an account: written by the event pipeline from each `Group` event
-- (accounts.step.ts), moved to the survivor by a merge and deleted by an erasure
-- (src/workflows). Memberships of calls made before this migration are not rebuilt: that would
-- read the whole event log at start-up.
CREATE TABLE account_members (
  workspace_id uuid NOT NULL,
  group_id text NOT NULL,
  profile_id uuid NOT NULL,
  first_seen_at timestamptz NOT NULL,
  last_seen_at timestamptz NOT NULL,
  PRIMARY KEY (workspace_id, group_id, profile_id),
  FOREIGN KEY (workspace_id, group_id) REFERENCES accounts (workspace_id, group_id) ON DELETE CASCADE
);
-- A profile's accounts (the listing's `profile_id`, merges, erasure).
CREATE INDEX account_members_profile_idx ON account_members (workspace_id, profile_id);
-- An account's most recently seen members first (GET /tenant/accounts/{id}).
CREATE INDEX account_members_recent_idx ON account_members (workspace_id, group_id, last_seen_at DESC);
