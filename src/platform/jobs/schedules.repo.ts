import type { Db, Queryable } from '../db/port';
import { enqueue } from './jobs.repo';
import { nextTick, parseSchedule } from './schedule';

/** SQL of recurring jobs: defining a schedule, and turning due ticks into jobs. */

export interface ScheduleDef {
  name: string;
  spec: string;
  queue: string;
  payload?: unknown;
}

/**
 * Creates or updates a schedule. An unchanged spec keeps its next tick (every process calls this at
 * start; none of them may postpone or repeat a tick); a changed spec starts from its next tick.
 */
export async function upsertSchedule(q: Queryable, def: ScheduleDef): Promise<void> {
  const schedule = parseSchedule(def.spec);
  const { rows } = await q.query<{ now: Date }>('SELECT now() AS now');
  const next = nextTick(schedule, rows[0]!.now)!;
  await q.query(
    `INSERT INTO job_schedules (name, spec, queue, payload, next_run_at) VALUES ($1, $2, $3, $4::jsonb, $5)
     ON CONFLICT (name) DO UPDATE SET
       next_run_at = CASE WHEN job_schedules.spec = EXCLUDED.spec THEN job_schedules.next_run_at
                          ELSE EXCLUDED.next_run_at END,
       spec = EXCLUDED.spec, queue = EXCLUDED.queue, payload = EXCLUDED.payload, updated_at = now()
     WHERE (job_schedules.spec, job_schedules.queue, job_schedules.payload)
       IS DISTINCT FROM (EXCLUDED.spec, EXCLUDED.queue, EXCLUDED.payload)`,
    [def.name, def.spec, def.queue, JSON.stringify(def.payload ?? {}), next],
  );
}

export async function deleteSchedule(q: Queryable, name: string): Promise<boolean> {
  const { rowCount } = await q.query('DELETE FROM job_schedules WHERE name = $1', [name]);
  return rowCount > 0;
}

/**
 * Enqueues one job for every due schedule among `names` that no other process holds right now, and
 * moves each to its next tick after now (ticks missed while nothing ran collapse into this one). The
 * job's key is the schedule and tick, so even a repeated tick could not queue twice.
 */
export async function materializeDueSchedules(db: Db, names: readonly string[]): Promise<number> {
  if (names.length === 0) return 0;
  return db.transaction(async (tx) => {
    const { rows } = await tx.query<{
      name: string;
      spec: string;
      queue: string;
      payload: unknown;
      next_run_at: Date;
      now: Date;
    }>(
      `SELECT name, spec, queue, payload, next_run_at, now() AS now FROM job_schedules
       WHERE name = ANY($1::text[]) AND next_run_at <= now()
       ORDER BY next_run_at LIMIT 50 FOR UPDATE SKIP LOCKED`,
      [names],
    );
    for (const s of rows) {
      await enqueue(tx, {
        queue: s.queue,
        payload: s.payload,
        key: `schedule:${s.name}:${s.next_run_at.toISOString()}`,
      });
      let next: Date | null;
      try {
        next = nextTick(parseSchedule(s.spec), s.now);
      } catch {
        next = null;
      }
      // A spec this version cannot read (edited by hand): park it a day rather than spin on it.
      await tx.query('UPDATE job_schedules SET next_run_at = $2, updated_at = now() WHERE name = $1', [
        s.name,
        next ?? new Date(s.now.getTime() + 86_400_000),
      ]);
    }
    return rows.length;
  });
}
