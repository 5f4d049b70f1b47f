-- The audit trail (docs/api.md, "Audit log"): one row per state-changing request of the tenant,
-- identity, intelligence and system routes, written before the answer leaves. Rows are never
-- updated, except that an erasure scrubs the diff of the entries about the erased profile.
CREATE TABLE audit_log (
  -- aud_… (time-ordered).
  id text PRIMARY KEY,
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  -- Milliseconds, as the service's clock gives them: the pages' keyset (time, id) is read back into a
  -- JavaScript Date, which would otherwise drop the microseconds and repeat a row at a page's edge.
  created_at timestamptz(3) NOT NULL,
  -- A stable dotted name: apikey.create, profile.erase, session.create, …
  action text NOT NULL,
  principal_type text NOT NULL CHECK (principal_type IN ('api_key', 'session', 'operator')),
  -- The key that acted (also a session's key); its name as it was then.
  key_id text,
  key_name text,
  -- The console session (ses_…) of a session principal.
  session_id text,
  target_type text NOT NULL,
  target_id text,
  -- {before, after} or {request: {body, query}}, secrets redacted; null for a refused request.
  diff jsonb,
  request_id text NOT NULL,
  client_ip text,
  user_agent text,
  -- The answer's HTTP status.
  status smallint NOT NULL
);

-- The log's pages, newest first, and its filters (by action, by key, by session); the same order
-- serves the retention sweep (oldest first, by time).
CREATE INDEX audit_log_time_idx ON audit_log (workspace_id, created_at, id);
CREATE INDEX audit_log_action_idx ON audit_log (workspace_id, action, created_at, id);
CREATE INDEX audit_log_key_idx ON audit_log (workspace_id, key_id, created_at, id) WHERE key_id IS NOT NULL;
CREATE INDEX audit_log_session_idx ON audit_log (workspace_id, session_id, created_at, id)
  WHERE session_id IS NOT NULL;
-- The entries about a profile: what an erasure scrubs and an access export carries.
CREATE INDEX audit_log_profile_idx ON audit_log (workspace_id, target_id) WHERE target_type = 'profile';
