-- Segment conditions read events and orders from indexes alone (index-only scans), not row by row
-- from the tables (issue 8's benchmark, docs/segments.md "How long it takes").
--
-- events_name_time_idx gains the two other columns an event count reads (event_type, profile_id):
-- the grouped pass over a window ("Added to Cart ≥ 2 in 30 days") then never visits the table.
-- On 200k profiles / 4M events, the index scan of the window took 130–210 ms and the index-only
-- scan 18 ms. Same key, same entry count: each event append writes one wider entry, not one more.
--
-- events_profile_idx gains event_name and event_type: a per-profile event count (the correlated
-- probe of a refresh, of a `calculate` page, and of every slice on the embedded database) reads
-- the profile's entries in the window and never the table. Its key is unchanged, so the timeline,
-- erasure and identity reads that use it keep their order.
--
-- orders_profile_idx gains status, total and currency: a per-profile order count or sum (the
-- correlated probe) becomes an index-only probe, 13 µs → 6 µs per profile on 200k profiles.
--
-- Each index is rebuilt under a new name, the old one dropped, and the new one renamed, so the
-- names (and every plan and document that cites them) stay. The build holds writes to the table
-- for its duration (tens of seconds on 20M events); migrations run at start, before ingestion.

CREATE INDEX events_name_time_cover_idx ON events (workspace_id, event_name, occurred_at)
  INCLUDE (event_type, profile_id);
DROP INDEX events_name_time_idx;
ALTER INDEX events_name_time_cover_idx RENAME TO events_name_time_idx;

CREATE INDEX events_profile_cover_idx ON events (workspace_id, profile_id, occurred_at)
  INCLUDE (event_name, event_type);
DROP INDEX events_profile_idx;
ALTER INDEX events_profile_cover_idx RENAME TO events_profile_idx;

CREATE INDEX orders_profile_cover_idx ON orders (workspace_id, profile_id, occurred_at DESC, seq DESC)
  INCLUDE (status, total, currency);
DROP INDEX orders_profile_idx;
ALTER INDEX orders_profile_cover_idx RENAME TO orders_profile_idx;
