import type { Logger } from 'pino';
import type { Queryable } from '../../platform/db';
import { enqueue, type JobRunner, registerMaintenance } from '../../platform/jobs';
import type { SettingsStore } from '../workspaces';
import * as repo from './intelligence.repo';
import { drainDirty, fitAndRescore } from './intelligence.service';

/**
 * The intelligence queues of the job runner.
 *
 * `intelligence.score` rescores the profiles the pipeline marked for their orders, with the current
 * fit, within seconds:
 * - `{workspace_id}`, keyed per workspace (a burst of batches makes one job). A running job holds its
 *   key, so marks made after its last look are queued onto it and would wait: like the segments'
 *   refresh, each job ends by queuing a follow-up under a second key that looks once more shortly
 *   after (and hands on to an ordinary job if it found work).
 * - `{sweep: true}` (schedule `intelligence.sweep`, every minute): the safety net for marks whose job
 *   was lost.
 *
 * `intelligence.fit` fits a workspace and rescores every customer:
 * - `{workspace_id}`, keyed per workspace, queued when a workspace was never fitted or enough of its
 *   customers ordered since its last fit (intelligence.service: REFIT_AFTER_*);
 * - `{all: true}` (schedule `intelligence.refit`, every 6 hours): refits every workspace with orders, so
 *   that scores age with time (a silent customer's P(alive) falls) even without new orders.
 */
export const SCORE_QUEUE = 'intelligence.score';
export const FIT_QUEUE = 'intelligence.fit';

type ScorePayload = { workspace_id: string } | { sweep: true };
type FitPayload = { workspace_id: string } | { all: true };

const JOB_BUDGET_MS = 20_000;
const FOLLOW_UP_MS = 250;
const mainKey = (ws: string) => `ws:${ws}`;
const nextKey = (ws: string) => `ws:${ws}:next`;

/** Queues a rescoring of the workspace's marked profiles, in the caller's transaction. */
export async function enqueueScore(
  q: Queryable,
  workspaceId: string,
  key = mainKey(workspaceId),
  delayMs = 0,
) {
  await enqueue(q, { queue: SCORE_QUEUE, key, workspaceId, delayMs, payload: { workspace_id: workspaceId } });
}

/** Queues a fit of the workspace (nothing new if one is already queued). */
export async function enqueueFit(q: Queryable, workspaceId: string): Promise<void> {
  await enqueue(q, {
    queue: FIT_QUEUE,
    key: mainKey(workspaceId),
    workspaceId,
    payload: { workspace_id: workspaceId },
  });
}

export interface IntelligenceJobOptions {
  log: Logger;
  settings: SettingsStore;
}

export async function registerIntelligenceJobs(
  runner: JobRunner,
  opts: IntelligenceJobOptions,
): Promise<void> {
  runner.register<ScorePayload>(
    SCORE_QUEUE,
    async (payload, { db, job }) => {
      if ('sweep' in payload) {
        for (const ws of await repo.listDirtyWorkspaces(db)) await enqueueScore(db, ws);
        return;
      }
      const ws = payload.workspace_id;
      const r = await drainDirty(db, opts.settings, ws, JOB_BUDGET_MS);
      if (r.refit) await enqueueFit(db, ws);
      if (job.key === nextKey(ws)) {
        if (!r.done || r.scored > 0) await enqueueScore(db, ws);
      } else {
        await enqueueScore(db, ws, nextKey(ws), r.done ? FOLLOW_UP_MS : 0);
      }
    },
    { timeoutMs: 60_000 },
  );
  runner.register<FitPayload>(
    FIT_QUEUE,
    async (payload, { db }) => {
      if ('all' in payload) {
        for (const ws of await repo.listScoredWorkspaces(db)) await enqueueFit(db, ws);
        return;
      }
      const r = await fitAndRescore(db, opts.settings, payload.workspace_id);
      // Marks left while the workspace had no fit (the score job waits for the first one) drain now.
      await enqueueScore(db, payload.workspace_id);
      opts.log.info(
        {
          workspace_id: payload.workspace_id,
          model: r.fit.models.name,
          rescored: r.rescored,
          complete: r.complete,
        },
        'intelligence: workspace fitted',
      );
    },
    { timeoutMs: 600_000 },
  );
  await runner.schedule('intelligence.sweep', 'every 1m', SCORE_QUEUE, { sweep: true });
  await runner.schedule('intelligence.refit', 'every 6h', FIT_QUEUE, { all: true });
  await registerMaintenance(runner, {
    name: 'intelligence.vacuum',
    spec: 'every 10m',
    run: (db) => repo.vacuumDirty(db),
  });
}
