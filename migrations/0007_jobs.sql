-- The job runner (src/platform/jobs): everything that is not event processing. Jobs are rows:
-- claimed with FOR UPDATE SKIP LOCKED, retried with backoff, dead-lettered, listed by `cdp jobs`.

CREATE TABLE jobs (
  -- Time-ordered (newSortableId), so the keyset of `cdp jobs` pages in creation order.
  id text PRIMARY KEY,
  queue text NOT NULL,
  -- De-duplication: at most one queued or running job per (queue, key).
  key text,
  workspace_id uuid REFERENCES workspaces (id) ON DELETE CASCADE,
  payload jsonb NOT NULL DEFAULT '{}'::jsonb,
  state text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'running', 'succeeded', 'dead')),
  attempts integer NOT NULL DEFAULT 0,
  max_attempts integer NOT NULL DEFAULT 5 CHECK (max_attempts BETWEEN 1 AND 100),
  run_at timestamptz NOT NULL DEFAULT now(),
  -- While running: the claim's token (fences writes of a worker whose lease was taken over) and the
  -- lease's end, after which another process may claim the job again (its worker died).
  locked_by text,
  locked_until timestamptz,
  last_error text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- Partial indexes stay small (only live work), at the price of dead entries left behind by rows
-- that move out; the prune maintenance task deletes finished rows and VACUUMs the table.
CREATE INDEX jobs_due_idx ON jobs (queue, run_at) WHERE state = 'queued';
CREATE INDEX jobs_lease_idx ON jobs (locked_until) WHERE state = 'running';
CREATE UNIQUE INDEX jobs_key_idx ON jobs (queue, key) WHERE key IS NOT NULL AND state IN ('queued', 'running');
CREATE INDEX jobs_finished_idx ON jobs (updated_at) WHERE state IN ('succeeded', 'dead');
CREATE INDEX jobs_workspace_idx ON jobs (workspace_id, id) WHERE workspace_id IS NOT NULL;

-- Recurring jobs. Whichever process locks a due row (SKIP LOCKED) enqueues that tick and moves
-- next_run_at on, in one transaction: several processes never enqueue the same tick twice.
CREATE TABLE job_schedules (
  name text PRIMARY KEY,
  spec text NOT NULL,
  queue text NOT NULL,
  payload jsonb NOT NULL DEFAULT '{}'::jsonb,
  next_run_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
