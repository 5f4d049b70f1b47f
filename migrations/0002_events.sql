-- The event log: every acknowledged event, appended by the ingest path (one multi-row INSERT per
-- group commit) and consumed by the processing workers.

CREATE TABLE events (
  -- Arrival order: workers claim by seq. Never shown to clients.
  seq bigserial PRIMARY KEY,
  -- The public id (evt_…), returned in the 202.
  id text NOT NULL UNIQUE,
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  -- Client de-duplication key (docs/ingestion.md); unique per workspace when present.
  message_id text,
  event_type text NOT NULL,
  event_name text NOT NULL,
  anonymous_id text,
  identity text,
  payload jsonb NOT NULL DEFAULT '{}'::jsonb,
  -- When the event happened (client `timestamp`, or receipt time when absent).
  occurred_at timestamptz NOT NULL,
  received_at timestamptz NOT NULL DEFAULT now(),
  -- The key that sent it (lineage "source").
  api_key_id text,
  -- Set by the worker in the same transaction that applies the event: exactly once.
  processed_at timestamptz,
  -- The profile the event was applied to (after merges, the surviving one is found via merges).
  profile_id uuid
);

CREATE UNIQUE INDEX events_message_id_idx ON events (workspace_id, message_id) WHERE message_id IS NOT NULL;
-- Small partial index: only the backlog, so claiming stays cheap however long the log grows.
CREATE INDEX events_unprocessed_idx ON events (seq) WHERE processed_at IS NULL;
CREATE INDEX events_profile_idx ON events (workspace_id, profile_id, occurred_at);
