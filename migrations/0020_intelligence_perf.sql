-- Intelligence (issue 9's benchmark, docs/intelligence.md "How long a fit takes"): a fit rescoring
-- a million customers writes a million customer_scores rows, and each row's foreign keys are
-- checked by a trigger. The workspace's check was a sixth of the INSERT's time (EXPLAIN ANALYZE of
-- one 5,000-row chunk: 40 ms of 238 ms) and guards nothing the profile's key does not: a score's
-- workspace is its profile's, profiles.workspace_id references workspaces ON DELETE CASCADE, and
-- customer_scores.profile_id references profiles ON DELETE CASCADE, so deleting a workspace still
-- deletes its scores (through its profiles) and no score can name a workspace that does not exist.
ALTER TABLE customer_scores DROP CONSTRAINT customer_scores_workspace_id_fkey;
