-- events_name_time_idx holds only the events that belong to a profile, as events_profile_idx does
-- since migration 0022 (issue 7's ingest A/B, docs/benchmarks.md). With this index dropped, ingest
-- measured 15,076 single events/s at 100 connections and 87,854 events/s in batches on PostgreSQL,
-- against 13,963 and 75,333 with it: an event is appended without a profile, so the entry each
-- append wrote was for a row no segment counts (an event counts for the profile it belongs to).
-- Processing writes the entry when it gives the event its profile, in the UPDATE that already wrote
-- a new entry in every index (profile_id is a key column of events_profile_idx). The segment
-- compiler's grouped pass says `profile_id IS NOT NULL`, so the planner can prove the predicate.
-- Same name, same key and columns, rebuilt as in migration 0019.

CREATE INDEX events_name_time_part_idx ON events (workspace_id, event_name, occurred_at)
  INCLUDE (event_type, profile_id) WHERE profile_id IS NOT NULL;
DROP INDEX events_name_time_idx;
ALTER INDEX events_name_time_part_idx RENAME TO events_name_time_idx;
