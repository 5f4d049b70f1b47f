-- The processing backlog: one small row per event waiting to be applied. Workers claim from here,
-- not from the event log. Claiming through a partial index of `events` (processed_at IS NULL) kept a
-- dead index entry per processed event in pages nothing ever inserts into again, so every claim
-- walked all the events ever processed until a VACUUM (PGlite has no autovacuum; many servers run
-- with it off or late): claims slowed as the log grew. Here the dead rows are tiny, and the worker
-- vacuums this table itself every few tens of thousands of events (processing/backlog-maintenance.ts).

CREATE TABLE event_backlog (
  -- The event's seq. No foreign key: the per-row check would cost every append a lookup; a claimed
  -- seq whose event was deleted meanwhile (workspace deletion, erasure) is simply dropped.
  seq bigint PRIMARY KEY
);

-- Every insert path of the event log (the group commit, the demo, tests, benchmarks, a bulk load
-- by hand) fills the backlog in the same statement: one statement-level trigger, no per-row cost.
CREATE FUNCTION events_enqueue() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO event_backlog (seq) SELECT seq FROM new_events;
  RETURN NULL;
END $$;

CREATE TRIGGER events_enqueue AFTER INSERT ON events
  REFERENCING NEW TABLE AS new_events FOR EACH STATEMENT EXECUTE FUNCTION events_enqueue();

INSERT INTO event_backlog (seq) SELECT seq FROM events WHERE processed_at IS NULL;

-- The old claim index: nothing reads it any more, and every append and every processed mark paid
-- for maintaining it.
DROP INDEX events_unprocessed_idx;
