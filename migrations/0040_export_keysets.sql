-- Workspace exports (GET /tenant/exports/…, docs/api.md "Workspace exports") read a workspace's rows
-- in keyset pages, each page its own short statement, within a time window (`since`, `until`).
--
-- Events are exported in the order they were received, (received_at, seq), and filtered on
-- received_at. The log had no index that starts with the workspace at all (its only other index is
-- the message-id one): without this one every page would walk the log of every workspace by seq.
-- received_at before seq makes `since` and `until` a range of the index, so an export of last
-- night's events reads last night's entries and nothing else. One more entry per appended event,
-- always at the right edge of its workspace's range.
CREATE INDEX events_export_idx ON events (workspace_id, received_at, seq);

-- Live profiles are exported in the order they were created, (created_at, seq), and filtered on
-- created_at; profiles_list_idx (workspace_id, seq) orders them but cannot bound a window. Partial
-- like it: a merged-away profile leaves both when it is merged (merged_into is already a key of
-- profiles_list_idx, so no update that was HOT becomes non-HOT).
CREATE INDEX profiles_export_idx ON profiles (workspace_id, created_at, seq) WHERE merged_into IS NULL;

-- One page of an export, planned in the walk's index order (src/platform/db/export-lines.ts,
-- readPage). The export statements run with no statistics to plan by (the log is never analyzed;
-- PGlite has no autovacuum): the planner guessed a handful of matching rows and read them with a
-- bitmap scan and a sort, that is every row after the key, sorted, for each page (a 50,000-event
-- export took a minute). With bitmap scans and sorts off while it plans, the ordered index scan is
-- the plan. A function's own settings, rather than SET LOCAL in a transaction, keep a page to one
-- statement.
--
-- Each distinct query is prepared once per session and planned once (a generic plan: the walk's
-- plan does not depend on where it stands): parsing and planning a page's statement, whose line
-- expression has some seventy nodes, cost PGlite about a millisecond and a half a page, more than
-- a 3 ms page can spare. There are as many distinct queries as kinds and formats of export.
--
-- `query` comes from the service's code, never from a client; it reads its parameters as `$1[n]` of
-- `params`, and answers the page's text, rows read and last key.
CREATE FUNCTION export_page(query text, params text[])
  RETURNS TABLE (text text, read integer, at text, seq bigint)
  LANGUAGE plpgsql
  SET enable_bitmapscan = off
  SET enable_sort = off
  SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
  stmt text := 'export_page_' || md5(query);
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_prepared_statements p WHERE p.name = stmt) THEN
    EXECUTE format('PREPARE %I (text[]) AS %s', stmt, query);
  END IF;
  RETURN QUERY EXECUTE format('EXECUTE %I (%L)', stmt, params);
END
$$;
