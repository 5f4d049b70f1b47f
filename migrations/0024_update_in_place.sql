-- Profiles and their scores are rewritten far more often than they are created: every identify,
-- every completed order (spend) and every refit (scores) updates the row, and most of those writes
-- change no indexed column (an e-mail or a merge does). With full pages each update put the new
-- version on another page, so it wrote a new entry in every index of the table and left a dead
-- tuple and dead entries behind that only VACUUM clears (PGlite has no autovacuum; the CI server
-- runs with it off). With a fifth of each page kept free the new version stays on its page (a HOT
-- update): no index entries, and the old version is pruned by the next statement that finds the
-- page short of space, no VACUUM.
--
-- Measured at 200k events (docs/benchmarks.md, "Rows that update in place"): HOT profile updates
-- 18–21% → 49–51%, score updates 0–5% → 40–46%; the spend and score writes 10–45% faster; the
-- profiles table 36 → 28 MB at the end of the run. The setting applies to pages written from now
-- on; `VACUUM FULL profiles, customer_scores` rewrites the old ones (docs/operations.md).

ALTER TABLE profiles SET (fillfactor = 80);
ALTER TABLE customer_scores SET (fillfactor = 80);
