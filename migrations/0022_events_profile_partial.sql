-- events_profile_idx holds only the events that belong to a profile (issue 7's ingest A/B,
-- docs/benchmarks.md "Quiet-machine figures"). An event is appended without a profile (processing
-- sets it), so every append wrote an index entry for a NULL profile_id that no query ever looks up:
-- every reader of this index asks for one profile (`profile_id = $n`, `= ANY(…)`, `= p.id`), which
-- implies NOT NULL, so the planner keeps using the partial index (EXPLAIN on 20M events: the
-- timeline, erasure, the merge re-pointing and the segment probe all still scan it). The entry is
-- written once, when processing gives the event its profile (an UPDATE that wrote a new entry
-- anyway, since profile_id is a key column). Same name, same key, rebuilt as in migration 0019.

CREATE INDEX events_profile_part_idx ON events (workspace_id, profile_id, occurred_at)
  INCLUDE (event_name, event_type) WHERE profile_id IS NOT NULL;
DROP INDEX events_profile_idx;
ALTER INDEX events_profile_part_idx RENAME TO events_profile_idx;
