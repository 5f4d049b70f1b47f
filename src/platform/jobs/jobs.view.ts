import type { Queryable } from '../db/port';
import { JOB_STATES, type Job, type JobState } from './jobs.repo';

/** The visible state of the job runner: what `cdp jobs` prints (SQL only). */

export interface ListJobsFilter {
  queue?: string;
  state?: JobState;
  workspaceId?: string;
  /** Keyset: only jobs with an id after this one (the previous page's `next`). */
  after?: string;
  /** 1–500, default 50. */
  limit?: number;
}

export interface JobPage {
  jobs: Job[];
  /** Pass as `after` for the next page; null on the last page. */
  next: string | null;
}

export async function listJobs(q: Queryable, filter: ListJobsFilter = {}): Promise<JobPage> {
  const limit = Math.min(500, Math.max(1, Math.floor(filter.limit ?? 50)));
  const { rows } = await q.query<Job>(
    `SELECT * FROM jobs
     WHERE ($1::text IS NULL OR queue = $1) AND ($2::text IS NULL OR state = $2)
       AND ($3::uuid IS NULL OR workspace_id = $3) AND ($4::text IS NULL OR id > $4)
     ORDER BY id LIMIT $5`,
    [filter.queue ?? null, filter.state ?? null, filter.workspaceId ?? null, filter.after ?? null, limit + 1],
  );
  const more = rows.length > limit;
  const jobs = more ? rows.slice(0, limit) : rows;
  return { jobs, next: more ? jobs[jobs.length - 1]!.id : null };
}

export type JobCounts = Record<string, Record<JobState, number>>;

/** Jobs per queue and state, every state present (0 when none). */
export async function jobCounts(q: Queryable, filter: { queue?: string } = {}): Promise<JobCounts> {
  const { rows } = await q.query<{ queue: string; state: JobState; n: number }>(
    `SELECT queue, state, count(*)::int AS n FROM jobs WHERE ($1::text IS NULL OR queue = $1)
     GROUP BY queue, state ORDER BY queue`,
    [filter.queue ?? null],
  );
  const out: JobCounts = {};
  for (const r of rows) {
    out[r.queue] ??= Object.fromEntries(JOB_STATES.map((s) => [s, 0])) as Record<JobState, number>;
    out[r.queue]![r.state] = r.n;
  }
  return out;
}

export interface ScheduleRow {
  name: string;
  spec: string;
  queue: string;
  payload: unknown;
  next_run_at: Date;
}

export async function listSchedules(q: Queryable): Promise<ScheduleRow[]> {
  const { rows } = await q.query<ScheduleRow>(
    'SELECT name, spec, queue, payload, next_run_at FROM job_schedules ORDER BY name',
  );
  return rows;
}
