import type { Db } from '../../platform/db';
import type { SettingsStore } from '../workspaces';
import { fromFitRows } from './fit-rows';
import * as repo from './intelligence.repo';
import { readScoreSettings } from './intelligence.settings';
import { rescoreProfiles } from './rescore';
import * as rescoring from './rescoring.repo';

// The per-order rescoring between fits (the `intelligence.score` queue), and when it calls for a
// refit.

/**
 * Profiles rescored per transaction: short transactions, short profile locks. PostgreSQL takes
 * 5,000 (a 100k-customer fit + rescore: 20.7 s with 1,000, 10.1 s with 5,000); PGlite keeps 1,000,
 * because an open transaction holds its only connection and every ingest waits for it.
 */
export const RESCORE_CHUNK = { postgres: 5000, pglite: 1000 } as const;

/** After this many profiles rescored for new orders since the last fit (or this share of its customers), refit. */
export const REFIT_AFTER_CHANGES = 50;
export const REFIT_AFTER_SHARE = 0.05;
/**
 * At most one automatic refit per workspace in this long, unless the changes since the last fit
 * reach its whole customer count (the data about doubled). Without it a workspace whose history
 * arrives in bulk refits at every 5% of growth: ~110 fits by this rule, each rescoring every customer, while
 * 100k customers' orders were processed (about 20× the customers in score writes, competing with
 * the pipeline for the same rows); with it about 11, one per doubling. Between fits each new order
 * is still scored at once with the current parameters, and the 6-hourly schedule refits the rest.
 */
export const REFIT_MIN_INTERVAL_MS = 10 * 60_000;

/** Whether the rescoring that just ran makes the workspace due for an automatic refit. Pure. */
export function refitDue(
  state: { changed_since_fit: number; customers_at_fit: number },
  fittedAt: Date,
  now: Date,
): boolean {
  const changed = state.changed_since_fit;
  if (changed < Math.max(REFIT_AFTER_CHANGES, REFIT_AFTER_SHARE * state.customers_at_fit)) return false;
  const doubled = changed >= Math.max(REFIT_AFTER_CHANGES, state.customers_at_fit);
  return doubled || now.getTime() - fittedAt.getTime() >= REFIT_MIN_INTERVAL_MS;
}

export interface DrainResult {
  /** No dirty profile left when it stopped. */
  done: boolean;
  scored: number;
  /** The workspace needs a fit (never fitted, or enough new orders since the last one). */
  refit: boolean;
}

/**
 * The per-order rescoring between fits: drains the workspace's dirty profiles (marked by the
 * pipeline step for their orders) in chunks, scoring each as of now with the current parameters;
 * the predictions are closed-form, so this takes milliseconds per profile. Stops after budgetMs.
 */
export async function drainDirty(
  db: Db,
  settingsStore: SettingsStore,
  workspaceId: string,
  budgetMs: number,
): Promise<DrainResult> {
  const t0 = Date.now();
  let scored = 0;
  let refit = false;
  const settings = await readScoreSettings(settingsStore, db, workspaceId);
  const size = RESCORE_CHUNK[db.engine];
  for (;;) {
    const step = await db.transaction(async (tx) => {
      await repo.lockWorkspaceScores(tx, workspaceId);
      const fit = fromFitRows(await repo.readCurrentFit(tx, workspaceId));
      // Never fitted: the first fit scores every customer, these included.
      if (!fit) return { n: 0, empty: true, refit: true };
      const ids = await rescoring.peekDirty(tx, workspaceId, size);
      if (ids.length === 0) return { n: 0, empty: true, refit: false };
      const r = await rescoreProfiles(tx, workspaceId, fit, ids, new Date(), settings);
      await rescoring.clearDirty(tx, workspaceId, ids);
      const state = await rescoring.countChanges(tx, workspaceId, r.scored);
      return { n: r.scored, empty: ids.length < size, refit: refitDue(state, fit.fittedAt, new Date()) };
    });
    scored += step.n;
    refit ||= step.refit;
    if (step.empty) return { done: true, scored, refit };
    if (Date.now() - t0 > budgetMs) return { done: false, scored, refit };
  }
}
