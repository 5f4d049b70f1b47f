import type { Queryable } from '../db/port';
import { newSortableId } from '../ids';

/** SQL of the job runner, and nothing else. Every statement runs on PGlite and PostgreSQL alike. */

export const JOB_STATES = ['queued', 'running', 'succeeded', 'dead'] as const;
export type JobState = (typeof JOB_STATES)[number];

export interface Job<P = unknown> {
  id: string;
  queue: string;
  key: string | null;
  workspace_id: string | null;
  payload: P;
  state: JobState;
  attempts: number;
  max_attempts: number;
  run_at: Date;
  locked_by: string | null;
  locked_until: Date | null;
  last_error: string | null;
  /** What the job reported when it succeeded (JobContext.report), e.g. the rows a sweep removed. */
  result: unknown;
  created_at: Date;
  updated_at: Date;
}

export interface NewJob {
  queue: string;
  payload?: unknown;
  /** At most one queued or running job per (queue, key); a duplicate enqueue returns the existing id. */
  key?: string | null;
  workspaceId?: string | null;
  /** First run no earlier than now + delayMs (default 0). */
  delayMs?: number;
  maxAttempts?: number;
}

/** 256 KiB of JSON: a job carries ids and parameters; bulk data belongs in tables of its own. */
export const MAX_PAYLOAD_BYTES = 256 * 1024;
export const DEFAULT_MAX_ATTEMPTS = 5;
export const MAX_ATTEMPTS_LIMIT = 100;

/**
 * Adds a job. Takes any Queryable, so a service can enqueue inside its own transaction (the job then
 * exists exactly when the rest of that transaction commits).
 */
export async function enqueue(q: Queryable, job: NewJob): Promise<{ id: string; created: boolean }> {
  const payload = JSON.stringify(job.payload ?? {});
  if (Buffer.byteLength(payload) > MAX_PAYLOAD_BYTES) {
    throw new RangeError(`job payload is larger than ${MAX_PAYLOAD_BYTES} bytes`);
  }
  const maxAttempts = job.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1 || maxAttempts > MAX_ATTEMPTS_LIMIT) {
    throw new RangeError(`maxAttempts must be an integer from 1 to ${MAX_ATTEMPTS_LIMIT}`);
  }
  const id = newSortableId('job');
  const { rows } = await q.query<{ id: string }>(
    `INSERT INTO jobs (id, queue, key, workspace_id, payload, max_attempts, run_at)
     VALUES ($1, $2, $3, $4, $5::jsonb, $6, now() + make_interval(secs => $7::float8 / 1000))
     ON CONFLICT (queue, key) WHERE key IS NOT NULL AND state IN ('queued', 'running') DO NOTHING
     RETURNING id`,
    [id, job.queue, job.key ?? null, job.workspaceId ?? null, payload, maxAttempts, job.delayMs ?? 0],
  );
  if (rows.length > 0) return { id, created: true };
  const existing = await q.query<{ id: string }>(
    `SELECT id FROM jobs WHERE queue = $1 AND key = $2 AND state IN ('queued', 'running')`,
    [job.queue, job.key],
  );
  // The holder of the key may have finished between the two statements: then enqueue again.
  return existing.rows[0] ? { id: existing.rows[0].id, created: false } : enqueue(q, job);
}

/** How many jobs of each workspace a claim may still take (workspaces not listed: `share`). */
export interface ClaimShares {
  /** Most jobs of one workspace running at once in the claiming pool. */
  share: number;
  /** Workspaces with jobs running in the pool now, and how many. */
  running: ReadonlyMap<string, number>;
}

/**
 * Claims up to `limit` due jobs of these queues (and jobs whose lease expired: their worker died),
 * each workspace at most its share of them: a workspace already running `share` jobs of the pool is
 * passed over, and among the others the oldest job of each workspace comes before any workspace's
 * second (round robin by turn, then age), so a workspace with a thousand jobs queued cannot keep
 * another's one job waiting behind them. Jobs without a workspace (maintenance) are not capped.
 * The candidates are the oldest CLAIM_WINDOW due jobs of the workspaces under their share.
 */
export async function claimJobs(
  q: Queryable,
  token: string,
  queues: ReadonlyArray<{ queue: string; leaseMs: number }>,
  limit: number,
  shares: ClaimShares = { share: limit, running: new Map() },
): Promise<Job[]> {
  const running = [...shares.running].filter(([, n]) => n > 0);
  const { rows } = await q.query<Job>(
    `WITH lease AS (SELECT * FROM unnest($1::text[], $2::float8[]) AS l(queue, ms)),
     room AS (SELECT * FROM unnest($5::uuid[], $6::int[]) AS r(ws, left_over)),
     candidate AS (SELECT j.id, j.workspace_id, j.run_at FROM jobs j
       WHERE j.state = 'queued' AND j.queue = ANY($1::text[]) AND j.run_at <= now()
         AND (j.workspace_id IS NULL
              OR COALESCE((SELECT left_over FROM room WHERE room.ws = j.workspace_id), $7) > 0)
       ORDER BY j.run_at LIMIT $8),
     ranked AS (SELECT c.id, c.run_at, c.workspace_id,
                       row_number() OVER (PARTITION BY c.workspace_id ORDER BY c.run_at, c.id) AS turn
                  FROM candidate c),
     chosen AS (SELECT r.id FROM ranked r
       WHERE r.workspace_id IS NULL
          OR r.turn <= COALESCE((SELECT left_over FROM room WHERE room.ws = r.workspace_id), $7)
       ORDER BY r.turn, r.run_at LIMIT $3),
     queued AS (SELECT j.id FROM jobs j JOIN chosen ON chosen.id = j.id
       WHERE j.state = 'queued' FOR UPDATE OF j SKIP LOCKED),
     expired AS (SELECT id FROM jobs WHERE state = 'running' AND locked_until < now() AND queue = ANY($1::text[])
       ORDER BY locked_until LIMIT $3 FOR UPDATE SKIP LOCKED),
     due AS (SELECT id FROM expired UNION ALL SELECT id FROM queued LIMIT $3)
     UPDATE jobs SET state = 'running', attempts = jobs.attempts + 1, locked_by = $4,
       locked_until = now() + make_interval(secs => lease.ms / 1000), updated_at = now()
     FROM due, lease WHERE jobs.id = due.id AND lease.queue = jobs.queue
     RETURNING jobs.*`,
    [
      queues.map((x) => x.queue),
      queues.map((x) => x.leaseMs),
      limit,
      token,
      running.map(([ws]) => ws),
      running.map(([, n]) => Math.max(0, shares.share - n)),
      shares.share,
      Math.min(1000, limit * 50),
    ],
  );
  return rows;
}

/** A job's report is a summary for operators, not data: 16 KiB of JSON at most. */
export const MAX_RESULT_BYTES = 16 * 1024;

/**
 * Marks a claimed job done, with what it reported (JSON, null for nothing). False if the claim was
 * lost meanwhile (lease expired and re-claimed).
 */
export async function completeJob(
  q: Queryable,
  id: string,
  token: string,
  result: string | null = null,
): Promise<boolean> {
  const { rowCount } = await q.query(
    `UPDATE jobs SET state = 'succeeded', locked_by = NULL, locked_until = NULL, updated_at = now(),
       result = $3::jsonb
     WHERE id = $1 AND state = 'running' AND locked_by = $2`,
    [id, token, result],
  );
  return rowCount > 0;
}

/**
 * Records a failed attempt: back to 'queued' after `retryInMs`, or 'dead' when its attempts are used
 * up or `dead` is set (the handler said retrying cannot help).
 */
export async function failJob(
  q: Queryable,
  id: string,
  token: string,
  error: string,
  retryInMs: number,
  dead = false,
): Promise<JobState | null> {
  const { rows } = await q.query<{ state: JobState }>(
    `UPDATE jobs SET state = CASE WHEN $5 OR attempts >= max_attempts THEN 'dead' ELSE 'queued' END,
       run_at = now() + make_interval(secs => $4::float8 / 1000), last_error = $3,
       locked_by = NULL, locked_until = NULL, updated_at = now()
     WHERE id = $1 AND state = 'running' AND locked_by = $2
     RETURNING state`,
    [id, token, error.slice(0, 2000), retryInMs, dead],
  );
  return rows[0]?.state ?? null;
}

/**
 * Gives claimed jobs back untouched (shutdown, storage outage inside the handler): queued again
 * after `retryInMs`, and the attempt does not count.
 */
export async function releaseJobs(
  q: Queryable,
  claims: ReadonlyArray<{ id: string; token: string }>,
  retryInMs = 0,
): Promise<number> {
  if (claims.length === 0) return 0;
  const { rowCount } = await q.query(
    `UPDATE jobs SET state = 'queued', attempts = jobs.attempts - 1, locked_by = NULL, locked_until = NULL,
       run_at = now() + make_interval(secs => $3::float8 / 1000), updated_at = now()
     FROM unnest($1::text[], $2::text[]) AS c(id, token)
     WHERE jobs.id = c.id AND jobs.state = 'running' AND jobs.locked_by = c.token`,
    [claims.map((c) => c.id), claims.map((c) => c.token), retryInMs],
  );
  return rowCount;
}

/** Deletes finished jobs last touched before the given ages; dead letters are kept longer. */
export async function pruneJobs(
  q: Queryable,
  opts: { succeededOlderThanMs: number; deadOlderThanMs: number },
): Promise<number> {
  const { rowCount } = await q.query(
    `DELETE FROM jobs WHERE (state = 'succeeded' AND updated_at < now() - make_interval(secs => $1::float8 / 1000))
        OR (state = 'dead' AND updated_at < now() - make_interval(secs => $2::float8 / 1000))`,
    [opts.succeededOlderThanMs, opts.deadOlderThanMs],
  );
  return rowCount;
}
