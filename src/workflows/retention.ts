import { setTimeout as pause } from 'node:timers/promises';
import type { Logger } from 'pino';
import { allWorkspaceSettings, type RetentionDays, type SettingsStore } from '../modules/workspaces';
import { type Db, preferIndexOrder, type Queryable } from '../platform/db';
import { enqueue, type JobRunner } from '../platform/jobs';
import type { PersonalDataRegistry, RetentionSetting, RetentionSweep } from '../platform/personal-data';
import { createSliceSizer, type SliceSizer, slicerFor } from '../platform/slices';

/**
 * Retention (docs/operations.md, "Retention"): the job runner removes each workspace's expired rows,
 * running every sweep the personal-data registry lists (src/personal-data.ts) with the cutoff its
 * workspace's setting gives (`retention.*`; `forever`: skipped).
 *
 * - `{plan: true}` (schedule `retention.sweep`, every hour) queues one job per workspace with any
 *   setting that is not `forever`, so the runner's round robin between workspaces and its cap of half
 *   the slots per workspace apply to retention as to any workspace's work;
 * - `{workspace_id, at}` sweeps one workspace, each sweep in batches of one short transaction sized
 *   by time (about 10 ms of the embedded database's one connection, 100 ms on PostgreSQL) with a rest
 *   as long after each, on the analytics lane (behind requests and event processing on PGlite; its own
 *   pool on PostgreSQL). A job stops after RETENTION_BUDGET_MS and queues its continuation behind the
 *   other workspaces' jobs, so one workspace's million expired rows hold a slot for seconds at a
 *   time, never longer.
 *   `at` is the moment the cutoffs count back from (the plan's time; a continuation keeps it).
 *
 * Each job logs `retention: workspace swept` and reports, in `cdp jobs`, what it removed per sweep.
 */
export const RETENTION_QUEUE = 'retention';
export const RETENTION_SCHEDULE = 'retention.sweep';
const RETENTION_EVERY = 'every 1h';

/** How long one job of a workspace sweeps before it hands its slot on (it queues its continuation). */
export const RETENTION_BUDGET_MS = 10_000;
/** Retention jobs running at once per process: slots of their own, so sweeps never take a refresh's or a fit's. */
const RETENTION_SLOTS = 2;
const DAY_MS = 86_400_000;

export type RetentionPayload = { plan: true } | { workspace_id: string; at: string };

/** What one job of a workspace did. */
export interface SweepReport {
  /** Rows removed by each sweep, named by the first table it lists (`events`, `outbox`, …). */
  removed: Record<string, number>;
  /** Every sweep ran until nothing expired was left (false: the budget ran out, a continuation goes on). */
  done: boolean;
  /** Transactions run (a batch that found nothing to remove included). */
  batches: number;
  ms: number;
}

/** The time before which rows of a setting have expired, or null for `forever`. */
export function cutoffOf(days: RetentionDays | undefined, at: Date): Date | null {
  return typeof days === 'number' ? new Date(at.getTime() - days * DAY_MS) : null;
}

/** Every sweep of the registry, in its owners' order. */
export function sweepsOf(registry: PersonalDataRegistry): RetentionSweep[] {
  return registry.owners.flatMap((o) => [...(o.sweeps ?? [])]);
}

/**
 * Batch sizes learnt per workspace and sweep: about 10 ms of PGlite's one connection (what anything
 * else waits behind one batch, as for the other slices there), about 100 ms on PostgreSQL (where a
 * batch holds only the rows it deletes, and larger ones cost less per row).
 */
const SIZERS = {
  pglite: createSliceSizer({ targetMs: 10, min: 1, max: 5_000, initial: 50 }),
  postgres: createSliceSizer({ targetMs: 100, min: 10, max: 10_000, initial: 500 }),
};

/**
 * After each batch the sweep rests as long as the batch took: it uses at most about half of one
 * connection's (and one core's) time, so a neighbour's requests mostly find both free, and the sweep
 * still removes rows dozens of times faster than ingest writes them (docs/benchmarks.md).
 */
const REST_PER_BATCH = 1;

export interface SweepOptions {
  budgetMs?: number;
  signal?: AbortSignal;
  sizer?: SliceSizer;
  /** The rest after a batch, as a multiple of the batch's time (default 1; 0: none). */
  rest?: number;
}

/**
 * Runs every sweep of the registry for one workspace, with the cutoffs its retention settings give
 * counted back from `at`, until each finds nothing more or the budget is spent. Each batch is its own
 * transaction on `db`'s lane; between batches the event loop gets a turn.
 */
export async function sweepWorkspace(
  db: Db,
  registry: PersonalDataRegistry,
  workspaceId: string,
  retention: Readonly<Partial<Record<RetentionSetting, RetentionDays>>>,
  at: Date,
  opts: SweepOptions = {},
): Promise<SweepReport> {
  const started = performance.now();
  const budgetMs = opts.budgetMs ?? RETENTION_BUDGET_MS;
  const sizer = opts.sizer ?? SIZERS[db.engine];
  const report: SweepReport = { removed: {}, done: true, batches: 0, ms: 0 };
  const finish = (done: boolean) => {
    report.done = done;
    report.ms = Math.round(performance.now() - started);
    return report;
  };
  for (const sweep of sweepsOf(registry)) {
    const before = cutoffOf(retention[sweep.setting], at);
    if (before === null) continue;
    const name = sweep.tables[0]!;
    report.removed[name] ??= 0;
    const slicer = slicerFor(sizer, `${workspaceId}:${name}`);
    for (;;) {
      if (opts.signal?.aborted || performance.now() - started >= budgetMs) return finish(false);
      const size = slicer.size();
      const t0 = performance.now();
      const n = await db.transaction(async (tx) => {
        // Each sweep reads its oldest rows in its index's order: never a bitmap of all expired rows.
        await preferIndexOrder(tx);
        return sweep.sweep(tx, workspaceId, before, size);
      });
      const took = performance.now() - t0;
      slicer.record(size, took);
      report.batches++;
      report.removed[name] += n;
      if (n < size) break;
      // Whatever waited meanwhile (a request, another workspace's work) goes first, with room to spare.
      await pause(took * (opts.rest ?? REST_PER_BATCH));
    }
  }
  return finish(true);
}

export interface RetentionJobOptions {
  log: Logger;
  settings: SettingsStore;
  registry: PersonalDataRegistry;
  budgetMs?: number;
}

/** Queues a sweep of every workspace with something that can expire, cutoffs counted back from `at`. */
export async function planRetention(db: Db, registry: PersonalDataRegistry, at: Date): Promise<number> {
  const settings = [...new Set(sweepsOf(registry).map((s) => s.setting))];
  let queued = 0;
  for await (const page of allWorkspaceSettings(db)) {
    const due = page.filter((w) => settings.some((s) => cutoffOf(w.settings.retention[s], at)));
    await db.transaction(async (tx) => {
      for (const w of due) await enqueueSweep(tx, w.id, at);
    });
    queued += due.length;
  }
  return queued;
}

/** Queues a sweep of one workspace (nothing new if one is queued or running under the same key). */
export function enqueueSweep(q: Queryable, workspaceId: string, at: Date, key = `ws:${workspaceId}`) {
  return enqueue(q, {
    queue: RETENTION_QUEUE,
    key,
    workspaceId,
    payload: { workspace_id: workspaceId, at: at.toISOString() },
  });
}

export async function registerRetentionJobs(runner: JobRunner, opts: RetentionJobOptions): Promise<void> {
  runner.register<RetentionPayload>(
    RETENTION_QUEUE,
    async (payload, { db, signal, job, report }) => {
      if ('plan' in payload) {
        const workspaces = await planRetention(db, opts.registry, new Date());
        report({ workspaces });
        return;
      }
      const ws = payload.workspace_id;
      const at = new Date(payload.at);
      const { retention } = await opts.settings.read(db, ws);
      const r = await sweepWorkspace(db, opts.registry, ws, retention, at, {
        budgetMs: opts.budgetMs ?? RETENTION_BUDGET_MS,
        signal,
      });
      report(r);
      const removed = Object.values(r.removed).reduce((a, b) => a + b, 0);
      opts.log[removed > 0 || !r.done ? 'info' : 'debug'](
        { workspace_id: ws, removed: r.removed, done: r.done, batches: r.batches, ms: r.ms },
        'retention: workspace swept',
      );
      // Out of budget: the rest waits behind other workspaces' jobs (a key of its own, as this job
      // still holds its key until it returns). A shutdown's job is given back and runs again anyway.
      if (!r.done && !signal.aborted) {
        await enqueueSweep(db, ws, at, job.key === `ws:${ws}` ? `ws:${ws}:more` : `ws:${ws}`);
      }
    },
    { timeoutMs: 120_000, lane: 'analytics', concurrency: RETENTION_SLOTS },
  );
  await runner.schedule(RETENTION_SCHEDULE, RETENTION_EVERY, RETENTION_QUEUE, { plan: true });
}
