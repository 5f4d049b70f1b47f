import type { Logger } from 'pino';
import type { Db, Queryable } from '../../platform/db';
import { type JobRunner, registerMaintenance, workspaceDrain } from '../../platform/jobs';
import { timedClosure } from './definitions';
import { refreshWorkspace } from './membership';
import { listDirtyWorkspaces, vacuumDirty } from './membership.repo';
import * as repo from './segments.repo';

/**
 * The `segments.refresh` queue of the job runner. Three kinds of job:
 * - `{workspace_id}`: drain that workspace's work (dirty profiles, full evaluations), queued per
 *   workspace by whoever creates work, with a follow-up after each job (platform/jobs drain.ts).
 * - `{sweep: true}` (schedule `segments.sweep`, every minute): the last safety net; it queues a
 *   refresh for every workspace with work left (e.g. a follow-up lost with a crashed process).
 * - `{windows: true}` (schedule `segments.windows`, every minute): time windows (`within_days`) move
 *   on without any new data, so every segment that has one (or refers to one that has) gets a full
 *   evaluation, in slices like any other.
 */
export const REFRESH_QUEUE = 'segments.refresh';

export type RefreshPayload = { workspace_id: string } | { sweep: true } | { windows: true };

/** One job drains for at most this long; the rest goes to a fresh job (the lease stays short). */
const JOB_BUDGET_MS = 20_000;

const drain = workspaceDrain(REFRESH_QUEUE);

/** Queues a refresh of the workspace (nothing new if one is already queued), in the caller's transaction. */
export function enqueueRefresh(q: Queryable, workspaceId: string): Promise<void> {
  return drain.enqueue(q, workspaceId);
}

export interface SegmentJobOptions {
  log: Logger;
  /** Test hook: the clock time windows are measured against. */
  now?: () => Date;
}

export async function registerSegmentJobs(runner: JobRunner, opts: SegmentJobOptions): Promise<void> {
  runner.register<RefreshPayload>(
    REFRESH_QUEUE,
    async (payload, { db, signal, job }) => {
      if ('sweep' in payload) return sweep(db);
      if ('windows' in payload) {
        await startAgedEvaluations(db);
        return;
      }
      const ws = payload.workspace_id;
      const r = await refreshWorkspace(db, ws, { ...opts, signal, budgetMs: JOB_BUDGET_MS });
      await drain.settle(db, job, ws, r);
    },
    { timeoutMs: 120_000, lane: 'analytics' },
  );
  await runner.schedule('segments.sweep', 'every 1m', REFRESH_QUEUE, { sweep: true });
  await runner.schedule('segments.windows', 'every 1m', REFRESH_QUEUE, { windows: true });
  await registerMaintenance(runner, {
    name: 'segments.vacuum',
    spec: 'every 10m',
    run: (db) => vacuumDirty(db),
  });
}

async function sweep(db: Db): Promise<void> {
  const workspaces = new Set([
    ...(await listDirtyWorkspaces(db)),
    ...(await repo.listWorkspacesWithPendingFull(db)),
  ]);
  for (const ws of workspaces) await enqueueRefresh(db, ws);
}

/**
 * Starts a full evaluation of every segment whose membership ages with time (one already under way
 * keeps going) and queues the refreshes. Answers the workspaces concerned.
 */
export async function startAgedEvaluations(db: Db): Promise<string[]> {
  const touched: string[] = [];
  for (const ws of await repo.listWorkspacesWithTimedSegments(db)) {
    const started = await db.transaction(async (tx) => {
      await repo.lockWorkspaceSegments(tx, ws);
      const ids = timedClosure(await repo.listDefinitions(tx, ws));
      const n = await repo.startFull(tx, ws, ids, false);
      if (n > 0) await enqueueRefresh(tx, ws);
      return n;
    });
    if (started > 0) touched.push(ws);
  }
  return touched;
}
