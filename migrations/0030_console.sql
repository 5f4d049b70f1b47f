-- The console (docs/console.md): sign-in sessions, and the per-minute event counts of its overview.

-- A console session: an API key exchanged once for an HttpOnly cookie. Rows live in the database so
-- that every instance of the service accepts the cookie and a sign-out ends it everywhere at once.
-- Only the SHA-256 of the cookie's token is stored. The key's own hash is kept so that every request
-- checks the key through the key cache the API uses (revoking the key ends its sessions at once, on
-- every instance: docs/console.md, "Sessions").
CREATE TABLE console_sessions (
  token_hash text PRIMARY KEY,
  -- Public id (ses_…), for logs; the token itself is never logged.
  id text NOT NULL UNIQUE,
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  key_id text NOT NULL,
  key_hash text NOT NULL,
  key_name text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  -- Absolute end (12 h after sign-in).
  expires_at timestamptz NOT NULL,
  -- Sliding end: pushed forward (never past expires_at) by use, at most once a minute.
  idle_expires_at timestamptz NOT NULL
);

-- Housekeeping finds ended sessions without walking live ones; a key's sessions are capped.
CREATE INDEX console_sessions_idle_idx ON console_sessions (idle_expires_at);
CREATE INDEX console_sessions_key_idx ON console_sessions (key_id, created_at);

-- Events received per workspace and minute, for the overview's chart: counting them from the log
-- would read every event of the last hour of every workspace (the log has no index by workspace and
-- time, and adding one would cost every append an entry). The counts are kept in shards (by the
-- writing backend) so that two group commits of one workspace never wait on the same row.
CREATE TABLE event_minutes (
  workspace_id uuid NOT NULL,
  minute timestamptz NOT NULL,
  shard smallint NOT NULL,
  count integer NOT NULL,
  PRIMARY KEY (workspace_id, minute, shard)
);

-- Statement level, like the backlog's trigger: one grouped upsert per append statement, whatever its
-- number of rows, on every path that appends to the log.
CREATE FUNCTION events_count_minutes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO event_minutes (workspace_id, minute, shard, count)
    SELECT workspace_id, date_bin('1 minute', received_at, TIMESTAMPTZ '2000-01-01 00:00:00+00'),
           (pg_backend_pid() % 8)::smallint, count(*)::int
      FROM new_events GROUP BY 1, 2
  ON CONFLICT (workspace_id, minute, shard) DO UPDATE SET count = event_minutes.count + EXCLUDED.count;
  RETURN NULL;
END $$;

CREATE TRIGGER events_count_minutes AFTER INSERT ON events
  REFERENCING NEW TABLE AS new_events FOR EACH STATEMENT EXECUTE FUNCTION events_count_minutes();
