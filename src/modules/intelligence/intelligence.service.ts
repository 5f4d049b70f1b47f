import type { Db } from '../../platform/db';
import { newSortableId } from '../../platform/ids';
import type { SettingsStore } from '../workspaces';
import * as repo from './intelligence.repo';
import { readScoreSettings } from './intelligence.settings';
import type { PurchaseModelName } from './models';
import { rescoreProfiles } from './rescore';
import { fitModels, fromFitRows, type StoredFit, toFitRows, toSummary } from './scoring';
import { readWorkspaceSummaries } from './summaries.repo';

/**
 * Profiles rescored per transaction: short transactions, short profile locks. PostgreSQL takes
 * 5,000 (a 100k-customer fit + rescore: 20.7 s with 1,000, 10.1 s with 5,000); PGlite keeps 1,000,
 * because an open transaction holds its only connection and every ingest waits for it.
 */
export const RESCORE_CHUNK = { postgres: 5000, pglite: 1000 } as const;

export interface FitRequest {
  model?: PurchaseModelName | undefined;
  asOf?: Date | undefined;
}

export interface FitOutcome {
  fit: StoredFit;
  rescored: number;
  escalated: number;
  /** False when a newer fit took over the rescoring before this one finished. */
  complete: boolean;
}

/**
 * Fits the workspace's models on its completed orders at or before asOf (default now), stores the
 * fit as the current one, then rescores every customer as of asOf in chunks (and clears the scores
 * of profiles with no order by then). The default purchase model is mbg_nbd (contract §8); too
 * little data gives the documented fallback, named in model.name. A newer fit started meanwhile
 * takes over: this one stops rescoring at its next chunk.
 */
export async function fitAndRescore(
  db: Db,
  settingsStore: SettingsStore,
  workspaceId: string,
  req: FitRequest = {},
): Promise<FitOutcome> {
  const asOf = req.asOf ?? new Date();
  const rows = await readWorkspaceSummaries(db, workspaceId, asOf);
  const fit = fitModels(newSortableId('fit'), asOf, rows.map(toSummary), req.model ?? 'mbg_nbd');
  await db.transaction(async (tx) => {
    await repo.insertFit(tx, toFitRows(workspaceId, fit));
    await repo.resetChanges(tx, workspaceId, rows.length);
  });
  const settings = await readScoreSettings(settingsStore, db, workspaceId);
  let rescored = 0;
  let escalated = 0;
  const chunk = (ids: readonly string[]) =>
    db.transaction(async (tx) => {
      await repo.lockWorkspaceScores(tx, workspaceId);
      if ((await repo.currentFitId(tx, workspaceId)) !== fit.fitId) return false;
      const r = await rescoreProfiles(tx, workspaceId, fit, ids, asOf, settings);
      rescored += r.scored;
      escalated += r.escalated;
      return true;
    });
  const ids = rows.map((r) => r.profile_id);
  const size = RESCORE_CHUNK[db.engine];
  for (let i = 0; i < ids.length; i += size) {
    if (!(await chunk(ids.slice(i, i + size)))) return { fit, rescored, escalated, complete: false };
  }
  // Profiles scored by an earlier fit that this one did not reach: no order by asOf (cleared), or a
  // first order committed after the summaries were read (scored now).
  for (;;) {
    const stale = await repo.listScoredBefore(db, workspaceId, fit.fitId, size);
    if (stale.length === 0) break;
    if (!(await chunk(stale))) return { fit, rescored, escalated, complete: false };
  }
  return { fit, rescored, escalated, complete: true };
}

/** The workspace's current fit, or null before its first. */
export async function currentFit(db: Db, workspaceId: string): Promise<StoredFit | null> {
  return fromFitRows(await repo.readCurrentFit(db, workspaceId));
}

/** After this many profiles rescored for new orders since the last fit (or this share of its customers), refit. */
export const REFIT_AFTER_CHANGES = 50;
export const REFIT_AFTER_SHARE = 0.05;

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
      const ids = await repo.peekDirty(tx, workspaceId, size);
      if (ids.length === 0) return { n: 0, empty: true, refit: false };
      const r = await rescoreProfiles(tx, workspaceId, fit, ids, new Date(), settings);
      await repo.clearDirty(tx, workspaceId, ids);
      const state = await repo.countChanges(tx, workspaceId, r.scored);
      const due = Math.max(REFIT_AFTER_CHANGES, REFIT_AFTER_SHARE * state.customers_at_fit);
      return { n: r.scored, empty: ids.length < size, refit: state.changed_since_fit >= due };
    });
    scored += step.n;
    refit ||= step.refit;
    if (step.empty) return { done: true, scored, refit };
    if (Date.now() - t0 > budgetMs) return { done: false, scored, refit };
  }
}
