-- The event log is never updated after it is appended. Where each processed event was applied (the
-- surviving profile) lives in a narrow table of its own, with the few columns the readers by
-- profile need: the timeline finds a profile's events here and reads them from the log by seq;
-- segment conditions count a profile's events, or the events of one name in a window, from these
-- indexes alone (they are 0019's covering indexes, moved).
--
-- Why: marking an event processed rewrote its whole row in the log. That update could never be HOT
-- (profile_id is a key column of two indexes), so it copied the row with its payload, wrote an entry
-- into each of the log's indexes again and left a dead row the size of the event behind; with no
-- autovacuum (PGlite has none, the CI server has it off) the log doubled. It was the largest single
-- statement of processing: 18.5 µs and 948 bytes of WAL per event at 200k events
-- (pg_stat_statements, docs/benchmarks.md "An event log that is never updated"). A row here is a
-- sixth of that WAL.
--
-- An event is processed when it has left the backlog (event_backlog); it has a row here when it was
-- applied to a profile. Rows move with merges and go with erasure, like the log's rows did.

CREATE TABLE event_profiles (
  -- The event's seq in the log.
  seq bigint PRIMARY KEY,
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  -- The surviving profile the event was applied to (moved by merges).
  profile_id uuid NOT NULL,
  -- Copies of the log's columns that segment conditions and the timeline filter and sort on.
  occurred_at timestamptz NOT NULL,
  event_type text NOT NULL,
  event_name text NOT NULL
);

INSERT INTO event_profiles (seq, workspace_id, profile_id, occurred_at, event_type, event_name)
SELECT seq, workspace_id, profile_id, occurred_at, event_type, event_name
  FROM events WHERE profile_id IS NOT NULL;

-- A profile's events by time: the timeline, per-profile event counts (correlated probes), merges.
CREATE INDEX event_profiles_profile_idx ON event_profiles (workspace_id, profile_id, occurred_at)
  INCLUDE (event_name, event_type);
-- The events of one name in a window: a segment's grouped pass over a whole workspace.
CREATE INDEX event_profiles_name_time_idx ON event_profiles (workspace_id, event_name, occurred_at)
  INCLUDE (event_type, profile_id);

DROP INDEX events_profile_idx;
DROP INDEX events_name_time_idx;
ALTER TABLE events DROP COLUMN processed_at, DROP COLUMN profile_id;
