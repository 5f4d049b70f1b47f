-- Event properties, typed and indexed: one row per value in a processed event's payload, so that a
-- segment's `where` test on a property reads an index, never the event's JSON (docs/segments.md,
-- "How property filters are evaluated"; docs/decisions.md, "Event properties in a typed table").
--
-- A row is written with the event's row of event_profiles (ingest's markEventsApplied), deleted with
-- it (erasure, a re-queued dead letter) and moved with it by a merge (profile_id: both indexes are
-- read without the table, by profile or grouped by profile). Rows, per event (event_property_rows below):
--
--   * one per non-null value at an addressable path: `path` is the dotted path a query writes
--     (`cart.items.0.sku`), `kind` its JSON type: o(bject), a(rray), n(umber) with `num`,
--     b(oolean) with `bool`, s(tring) with `str`, or S: a string of more than 500 characters, of
--     which `str` keeps the first 501 (a query value has at most 500, so every comparison but a
--     substring test is decided by them);
--   * one per scalar element of an array, at the array's path followed by a dot (`tags.`): what
--     `contains` looks for. No query path ends with a dot, so these never answer another test;
--   * or, when the event's rows would be more than 256 or one of them too wide for an index entry,
--     only a marker (path '', kind x): that event's tests read its payload (rare by construction).
--
-- Unaddressable values get no row, so no test can miss them: keys that are empty or contain a dot,
-- paths of more than 10 segments or 500 characters (the query language's limits).

CREATE TABLE event_properties (
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  -- The event's seq in the log, and the copies of event_profiles' columns a segment groups on.
  seq bigint NOT NULL,
  profile_id uuid NOT NULL,
  event_name text NOT NULL,
  event_type text NOT NULL,
  occurred_at timestamptz NOT NULL,
  path text NOT NULL,
  kind "char" NOT NULL,
  num numeric,
  -- Code point order for ranges and prefixes, whatever the database's collation.
  str text COLLATE "C",
  bool boolean
);

CREATE FUNCTION event_property_rows(payload jsonb)
RETURNS TABLE (path text, kind "char", num numeric, str text, bool boolean)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  WITH RECURSIVE node(path, depth, v) AS (
      SELECT ''::text, 0, payload
    UNION ALL
      SELECT CASE WHEN n.depth = 0 THEN c.key ELSE n.path || '.' || c.key END, n.depth + 1, c.value
        FROM node n
        CROSS JOIN LATERAL (
          SELECT o.key, o.value
            FROM jsonb_each(CASE WHEN jsonb_typeof(n.v) = 'object' THEN n.v END) o
           WHERE o.key <> '' AND strpos(o.key, '.') = 0
          UNION ALL
          SELECT (a.i - 1)::text, a.value
            FROM jsonb_array_elements(CASE WHEN jsonb_typeof(n.v) = 'array' THEN n.v END)
                 WITH ORDINALITY AS a(value, i)
        ) c
       WHERE n.depth < 10 AND char_length(n.path) <= 500
  ),
  value_rows AS (
      SELECT n.path, n.v FROM node n
       WHERE n.depth > 0 AND char_length(n.path) <= 500 AND jsonb_typeof(n.v) <> 'null'
    UNION ALL
      SELECT n.path || '.', el.value
        FROM node n CROSS JOIN LATERAL jsonb_array_elements(n.v) el
       WHERE n.depth > 0 AND char_length(n.path) <= 500 AND jsonb_typeof(n.v) = 'array'
         AND jsonb_typeof(el.value) IN ('string', 'number', 'boolean')
  ),
  typed AS (
    SELECT r.path,
           (CASE jsonb_typeof(r.v)
              WHEN 'object' THEN 'o' WHEN 'array' THEN 'a' WHEN 'number' THEN 'n' WHEN 'boolean' THEN 'b'
              ELSE CASE WHEN char_length(r.v #>> '{}') > 500 THEN 'S' ELSE 's' END
            END)::"char" AS kind,
           CASE WHEN jsonb_typeof(r.v) = 'number' THEN r.v::numeric END AS num,
           CASE WHEN jsonb_typeof(r.v) = 'string' THEN left(r.v #>> '{}', 501) END AS str,
           CASE WHEN jsonb_typeof(r.v) = 'boolean' THEN r.v::boolean END AS bool
      FROM value_rows r
  ),
  verdict AS (
    -- An index entry holds at most about 2.7 kB; with an event name of up to 200 characters, a row
    -- whose path and value take more than 1600 bytes could not be indexed.
    SELECT count(*) AS n,
           max(octet_length(t.path) + COALESCE(octet_length(t.str), 0) + COALESCE(octet_length(t.num::text), 0))
             AS widest
      FROM typed t
  )
  SELECT t.path, t.kind, t.num, t.str, t.bool FROM typed t, verdict
   WHERE verdict.n <= 256 AND verdict.widest <= 1600
  UNION ALL
  SELECT '', 'x'::"char", NULL::numeric, NULL::text, NULL::boolean FROM verdict
   WHERE verdict.n > 256 OR verdict.widest > 1600
$$;

-- The value at a path of one event's payload, for the tests of an event that has only the marker
-- row. A function declared PARALLEL SAFE rather than a sub-query in the compiled SQL: a correlated
-- sub-query anywhere in a statement keeps PostgreSQL from scanning in parallel (the grouped pass
-- over 200k profiles went from 216 ms, parallel, to 322 ms; docs/decisions.md).
CREATE FUNCTION event_payload_at(event_seq bigint, at_path text[]) RETURNS jsonb
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT payload #> at_path FROM events WHERE seq = event_seq
$$;

-- Events processed before this migration (before the indexes: one sort per index is several times
-- faster than maintaining them row by row; docs/operations.md has the time it takes).
INSERT INTO event_properties (workspace_id, seq, profile_id, event_name, event_type, occurred_at, path, kind,
                              num, str, bool)
SELECT a.workspace_id, a.seq, a.profile_id, a.event_name, a.event_type, a.occurred_at, r.path, r.kind, r.num,
       r.str, r.bool
  FROM event_profiles a
  JOIN events e ON e.seq = a.seq
  CROSS JOIN LATERAL event_property_rows(e.payload) r;

-- A profile's rows of one event name and path in a window: a condition per profile (a refresh, a
-- slice, a page) reads exactly the rows it tests, index-only, with no detour through
-- event_profiles; another test of the same event probes here by the same key and seq. Also
-- erasure and merges (by profile) and a dead letter put back (by its event).
CREATE INDEX event_properties_profile_idx
  ON event_properties (workspace_id, profile_id, event_name, path, occurred_at)
  INCLUDE (seq, kind, num, str, bool);
-- A path of one event name in a window, for a whole workspace: the grouped pass of `calculate` and
-- of a full evaluation on PostgreSQL, index-only.
CREATE INDEX event_properties_name_path_idx ON event_properties (workspace_id, event_name, path, occurred_at)
  INCLUDE (profile_id, seq, event_type, kind, num, str, bool);
