import type { Logger } from 'pino';
import type { Db, Queryable } from '../../platform/db';
import { enqueue, type JobRunner, registerMaintenance } from '../../platform/jobs';
import { timedClosure } from './definitions';
import { refreshWorkspace } from './membership';
import { listDirtyWorkspaces, vacuumDirty } from './membership.repo';
import * as repo from './segments.repo';

/**
 * The `segments.refresh` queue of the job runner. Three kinds of job:
 * - `{workspace_id}`: drain that workspace's work (dirty profiles, full evaluations). Queued with a
 *   per-workspace key by whoever creates work, so a burst of batches makes one job. A running job
 *   holds that key, so work marked between its last look and its end is queued onto it and would
 *   wait: each such job ends by queuing a follow-up under a second key, which looks once more
 *   250 ms later (and hands on to an ordinary job if it found work).
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
/** How long after a job its follow-up looks again (the marking transactions have committed by then). */
const FOLLOW_UP_MS = 250;

const mainKey = (workspaceId: string) => `ws:${workspaceId}`;
const nextKey = (workspaceId: string) => `ws:${workspaceId}:next`;

/** Queues a refresh of the workspace (nothing new if one is already queued), in the caller's transaction. */
export async function enqueueRefresh(
  q: Queryable,
  workspaceId: string,
  key = mainKey(workspaceId),
  delayMs = 0,
): Promise<void> {
  await enqueue(q, {
    queue: REFRESH_QUEUE,
    key,
    workspaceId,
    delayMs,
    payload: { workspace_id: workspaceId },
  });
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
      if (job.key === nextKey(ws)) {
        // A follow-up that found work (or ran out of time) hands on to an ordinary job.
        if (!r.done || r.worked) await enqueueRefresh(db, ws);
      } else {
        // Work marked while this job ran past its last look was queued onto this very job (it holds
        // the key): a follow-up under the other key looks once more, a moment later.
        await enqueueRefresh(db, ws, nextKey(ws), r.done ? FOLLOW_UP_MS : 0);
      }
    },
    { timeoutMs: 120_000 },
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
