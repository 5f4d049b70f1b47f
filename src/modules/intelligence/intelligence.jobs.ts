import type { Logger } from 'pino';
import type { Queryable } from '../../platform/db';
import { enqueue, type JobRunner, registerMaintenance, workspaceDrain } from '../../platform/jobs';
import type { SettingsStore } from '../workspaces';
import { drainDirty } from './drain';
import { fitAndRescore } from './intelligence.service';
import * as rescoring from './rescoring.repo';

/**
 * The intelligence queues of the job runner.
 *
 * `intelligence.score` rescores the profiles the pipeline marked for their orders, with the current
 * fit, within seconds:
 * - `{workspace_id}`, queued per workspace (a burst of batches makes one job), with a follow-up
 *   after each job, like the segments' refresh (platform/jobs drain.ts).
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
const scoreDrain = workspaceDrain(SCORE_QUEUE);

/** Queues a rescoring of the workspace's marked profiles, in the caller's transaction. */
export function enqueueScore(q: Queryable, workspaceId: string): Promise<void> {
  return scoreDrain.enqueue(q, workspaceId);
}

/** Queues a fit of the workspace (nothing new if one is already queued). */
export async function enqueueFit(q: Queryable, workspaceId: string): Promise<void> {
  await enqueue(q, {
    queue: FIT_QUEUE,
    key: `ws:${workspaceId}`,
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
        for (const ws of await rescoring.listDirtyWorkspaces(db)) await enqueueScore(db, ws);
        return;
      }
      const ws = payload.workspace_id;
      const r = await drainDirty(db, opts.settings, ws, JOB_BUDGET_MS);
      if (r.refit) await enqueueFit(db, ws);
      await scoreDrain.settle(db, job, ws, { done: r.done, worked: r.scored > 0 });
    },
    { timeoutMs: 60_000 },
  );
  runner.register<FitPayload>(
    FIT_QUEUE,
    async (payload, { db }) => {
      if ('all' in payload) {
        for (const ws of await rescoring.listScoredWorkspaces(db)) await enqueueFit(db, ws);
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
          summaries_ms: Math.round(r.timings.summariesMs),
          fit_ms: Math.round(r.timings.fitMs),
          rescore_ms: Math.round(r.timings.rescoreMs),
        },
        'intelligence: workspace fitted',
      );
    },
    { timeoutMs: 600_000, lane: 'analytics' },
  );
  await runner.schedule('intelligence.sweep', 'every 1m', SCORE_QUEUE, { sweep: true });
  await runner.schedule('intelligence.refit', 'every 6h', FIT_QUEUE, { all: true });
  await registerMaintenance(runner, {
    name: 'intelligence.vacuum',
    spec: 'every 10m',
    run: (db) => rescoring.vacuumDirty(db),
  });
}
