-- Identity graph, lineage trail, dead letters, suppression and the erasure log: what the processing
-- worker and the profile / identity endpoints build on top of events and profiles.

-- One node per identifier seen in a workspace. It belongs to exactly one live profile: a merge
-- repoints the merged-away profile's nodes to the survivor, so a lookup never follows chains.
CREATE TABLE identity_nodes (
  id uuid PRIMARY KEY,
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  type text NOT NULL CHECK (type IN ('email', 'phone', 'external_id', 'anonymous_id')),
  -- Normalized (docs/profiles.md): e-mail lower-cased, phone E.164, anonymous id lower-cased.
  value text NOT NULL,
  profile_id uuid NOT NULL REFERENCES profiles (id) ON DELETE CASCADE,
  first_seen timestamptz NOT NULL,
  last_seen timestamptz NOT NULL,
  -- The unique index is also what stops two workers creating two profiles for one identifier.
  UNIQUE (workspace_id, type, value)
);

CREATE INDEX identity_nodes_profile_idx ON identity_nodes (profile_id);

-- Two identifiers seen together for the first time (an event carrying an anonymous id and an
-- identity): the evidence for why they belong to one profile.
CREATE TABLE identity_edges (
  seq bigserial PRIMARY KEY,
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  from_node uuid NOT NULL REFERENCES identity_nodes (id) ON DELETE CASCADE,
  to_node uuid NOT NULL REFERENCES identity_nodes (id) ON DELETE CASCADE,
  -- The event (evt_…) that linked them; null when linked through the API.
  event_id text,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (from_node, to_node)
);

CREATE INDEX identity_edges_to_idx ON identity_edges (to_node);

-- Merged-away profiles per survivor (merge cap, graph, erasure).
CREATE INDEX profiles_merged_into_idx ON profiles (merged_into) WHERE merged_into IS NOT NULL;

-- Every field-level change of a profile (docs/profiles.md, lineage): GET /tenant/profiles/{id}/lineage.
-- No foreign keys: the worker writes thousands of rows per batch and a per-row key check measured
-- 40% of the insert; erasure deletes a profile's lineage explicitly and merges move it.
CREATE TABLE profile_lineage (
  seq bigserial PRIMARY KEY,
  workspace_id uuid NOT NULL,
  profile_id uuid NOT NULL,
  -- JSON pointer: /email, /first_name, /attributes/plan/tier.
  path text NOT NULL,
  -- Null: the key did not exist before.
  old_value jsonb,
  new_value jsonb,
  -- Who wrote it: an event (evt_…) or an API key (key_…).
  source_type text NOT NULL CHECK (source_type IN ('event', 'api_key')),
  source_id text,
  -- Set when the change came from merging that profile into this one.
  merged_from uuid,
  -- Event time of the write (request time for API writes): what the newer-wins rule compared.
  occurred_at timestamptz NOT NULL,
  recorded_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX profile_lineage_profile_idx ON profile_lineage (profile_id, seq);

-- Events the worker could not apply (a bug, a payload it cannot handle, no usable identifier),
-- kept with the reason so that the stream never stops behind them. The event row stays (marked
-- processed); POST /tenant/dead-letters/{id}/retry puts it back in the stream.
CREATE TABLE dead_letters (
  seq bigserial PRIMARY KEY,
  id text NOT NULL UNIQUE,
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  event_seq bigint NOT NULL UNIQUE REFERENCES events (seq) ON DELETE CASCADE,
  reason text NOT NULL,
  attempts integer NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX dead_letters_workspace_idx ON dead_letters (workspace_id, seq);

-- Identifiers of profiles erased with ?suppress=true. Only a SHA-256 of "type:value" is kept, so the
-- block list does not itself retain the erased person's e-mail or phone.
CREATE TABLE identifier_suppressions (
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  hash text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, hash)
);

-- The erasure log: who erased which profile id when, and how much, never what.
CREATE TABLE profile_erasures (
  seq bigserial PRIMARY KEY,
  id text NOT NULL UNIQUE,
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  profile_id uuid NOT NULL,
  erased_profile_ids uuid[] NOT NULL,
  api_key_id text,
  suppressed boolean NOT NULL,
  counts jsonb NOT NULL,
  erased_at timestamptz NOT NULL DEFAULT now()
);
