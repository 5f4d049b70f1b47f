-- Queues the one-off repair of orders left on merged-away profiles by merges the event pipeline made
-- before the merge workflow was one function (src/workflows/repair.ts): the job moves them to their
-- survivors, recomputes both order summaries, marks both profiles for rescoring and segment refresh,
-- and logs how many it moved. A job and not this migration's own UPDATE, so a start never waits for
-- it and it runs in pages of short transactions. Queued only where there is something to repair.
INSERT INTO jobs (id, queue, key, payload, max_attempts)
SELECT 'job_0028_repair_stranded_orders', 'repair.stranded-orders', 'once', '{}'::jsonb, 10
 WHERE EXISTS (SELECT 1 FROM orders o JOIN profiles p ON p.id = o.profile_id WHERE p.merged_into IS NOT NULL)
ON CONFLICT DO NOTHING;
