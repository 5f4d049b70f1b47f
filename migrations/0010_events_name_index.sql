-- Segment conditions on event history ("Added to Cart at least twice in the last 30 days") read the
-- events of one name in a time window. Without this index that is a scan of the whole log: on 20M
-- events over 1M profiles (bench/segments), 1.4 s for the hand-written query and 5.8 s for a
-- correlated count per profile; with it, 0.5 s as one grouped pass (EXPLAIN ANALYZE in
-- docs/decisions.md, "Segments"). The per-profile index (events_profile_idx) still serves a refresh
-- of a few dirty profiles.
CREATE INDEX events_name_time_idx ON events (workspace_id, event_name, occurred_at);
