-- The public event id (evt_…) had a unique index that nothing reads: events are found by seq (the
-- backlog, dead letters, the timeline's cursor), by (workspace, message_id) for de-duplication, and
-- by profile; no route or statement looks one up by its id. The id is made by the service alone
-- (platform/ids.ts: the millisecond and 80 random bits), so the index only cost writes: an entry on
-- every append, and another on every processed event, because marking an event (profile_id is a
-- key column of two indexes) can never be a HOT update and so writes every index of the log again.
--
-- Measured (docs/benchmarks.md, "The event id's index"): marking 1000 events 20.5 → 16–17 ms per
-- statement at 200k events. A lookup by event id, when one is needed, gets an index of its own
-- then, on (workspace_id, id).

ALTER TABLE events DROP CONSTRAINT events_id_key;
