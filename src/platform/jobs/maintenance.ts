import type { Db } from '../db/port';
import { pruneJobs } from './jobs.repo';
import type { JobRunner } from './runner';

/**
 * Maintenance as ordinary scheduled jobs on one queue: `registerMaintenance(runner, task)` in every
 * process that may run it; exactly one process runs each tick (the schedule guarantees it). Tasks
 * are idempotent housekeeping (VACUUM a table, delete old rows), retried like any job.
 */
export const MAINTENANCE_QUEUE = 'maintenance';

export interface MaintenanceTask {
  /** Unique; also the schedule's name (`maintenance:<name>`). */
  name: string;
  /** When it runs (see schedule.ts), e.g. `every 10m` or `30 3 * * *`. */
  spec: string;
  run(db: Db, signal: AbortSignal): Promise<void>;
}

const registries = new WeakMap<JobRunner, Map<string, MaintenanceTask>>();

export async function registerMaintenance(runner: JobRunner, task: MaintenanceTask): Promise<void> {
  let tasks = registries.get(runner);
  if (!tasks) {
    const own = new Map<string, MaintenanceTask>();
    tasks = own;
    registries.set(runner, own);
    runner.register<{ task: string }>(
      MAINTENANCE_QUEUE,
      async ({ task: name }, { db, signal }) => {
        const t = own.get(name);
        // Scheduled by a process that knows a task this one does not: fail, another may run it.
        if (!t) throw new Error(`no maintenance task "${name}" in this process`);
        await t.run(db, signal);
      },
      { timeoutMs: 3_600_000 },
    );
  }
  if (tasks.has(task.name)) throw new Error(`maintenance task "${task.name}" is already registered`);
  tasks.set(task.name, task);
  await runner.schedule(`maintenance:${task.name}`, task.spec, MAINTENANCE_QUEUE, { task: task.name });
}

/**
 * The job table's own housekeeping: deletes succeeded jobs after `succeededMs` (default 1 day) and
 * dead letters after `deadMs` (default 30 days), then VACUUMs the table. PGlite has no autovacuum
 * (and CI PostgreSQL runs without it): without this the partial indexes of live work fill with
 * entries of rows long gone, and every claim walks past them.
 */
export function pruneJobsTask(
  opts: { spec?: string; succeededMs?: number; deadMs?: number } = {},
): MaintenanceTask {
  return {
    name: 'jobs.prune',
    spec: opts.spec ?? 'every 10m',
    async run(db) {
      await pruneJobs(db, {
        succeededOlderThanMs: opts.succeededMs ?? 86_400_000,
        deadOlderThanMs: opts.deadMs ?? 30 * 86_400_000,
      });
      await db.exec('VACUUM (ANALYZE) jobs');
    },
  };
}
