-- The R, F and M quintile scores behind a profile's rfm_segment, as one three-digit number
-- (R·100 + F·10 + M, e.g. 531), written by the intelligence module's rescoring beside the label
-- (profiles/scores.repo.ts storeScores). GET /intelligence/summary counts the live profiles per
-- (R, F) from it (docs/intelligence.md, "The workspace at a glance"); the label alone cannot say
-- which of its cells a profile is in. Null while the profile is unscored, and for a profile scored
-- before this migration until the workspace's next fit (every 6 hours, or POST
-- /intelligence/models/fit) rescores it. No index: a score update that changes an indexed column is
-- never HOT (0024_update_in_place.sql), and the summary reads the workspace's rows once anyway.
ALTER TABLE profiles ADD COLUMN rfm_score smallint CHECK (rfm_score BETWEEN 111 AND 555);
