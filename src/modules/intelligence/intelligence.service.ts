import { createYielder } from '../../platform/cooperate';
import type { Db } from '../../platform/db';
import { newSortableId } from '../../platform/ids';
import type { SettingsStore } from '../workspaces';
import { fromFitRows, toFitRows } from './fit-rows';
import * as repo from './intelligence.repo';
import { readScoreSettings } from './intelligence.settings';
import type { PurchaseModelName } from './models';
import { runCooperatively } from './models/nelder-mead';
import { fitWorkspaceModelsSteps } from './models/workspace-models';
import { rescoreProfiles } from './rescore';
import * as rescoring from './rescoring.repo';
import { createFitAccumulator, createSummaryScorer, type StoredFit, storedFit, toSummary } from './scoring';
import { FIRST_PROFILE_ID, listCustomerPage, streamWorkspaceSummaries } from './summaries.repo';

/**
 * Profiles rescored per transaction: short transactions, short profile locks. PostgreSQL takes
 * 5,000 (a 100k-customer fit + rescore: 20.7 s with 1,000, 10.1 s with 5,000); PGlite keeps 1,000,
 * because an open transaction holds its only connection and every ingest waits for it.
 */
export const RESCORE_CHUNK = { postgres: 5000, pglite: 1000 } as const;

/**
 * A fit's rescoring pages. On PostgreSQL 10,000: half the statements and commits of 5,000 for the
 * same rows; 1M customers rescored in 41.8 s instead of 48.1 s (`npm run bench -- intelligence`,
 * two chunks in flight; 39.9 s with three, FIT_RESCORE_PARALLEL). A page's profiles stay locked
 * about a second; the per-order rescoring keeps RESCORE_CHUNK.
 */
export const FIT_RESCORE_CHUNK = { postgres: 10_000, pglite: 1000 } as const;

/**
 * A fit's summary pages read at once, and its rescoring chunks in flight at once. Each statement
 * runs on one backend, one core, and both passes are database work (reading summaries; writing
 * scores, locking and updating profiles): with one at a time a 2-core server had a core idle.
 * PGlite has one connection, so one.
 */
export const RESCORE_PARALLEL = { postgres: 2, pglite: 1 } as const;

/**
 * Rescoring chunks in flight at once. A chunk is a dozen statements, and between two of them its
 * backend waits for the service (a round trip, the scoring): a third chunk fills those gaps.
 */
export const FIT_RESCORE_PARALLEL = { postgres: 3, pglite: 1 } as const;

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
  /** Where the time went (ms): reading summaries, fitting, rescoring; the fit job logs it. */
  timings: { summariesMs: number; fitMs: number; rescoreMs: number };
}

/**
 * Fits the workspace's models on its completed orders at or before asOf (default now), stores the
 * fit as the current one, then rescores every customer as of asOf in chunks (and clears the scores
 * of profiles with no order by then). The default purchase model is mbg_nbd (contract §8); too
 * little data gives the documented fallback, named in model.name. A newer fit started meanwhile
 * takes over: this one stops rescoring at its next chunk.
 *
 * No customer is held: the summaries stream through the fit's accumulators page by page, which
 * keep condensed (x, t_x, T) and (x, z̄) rows and a count per distinct RFM value (1M customers:
 * 1.9 GB peak RSS when every customer was held, 0.75 GB streamed, 0.38–0.41 GB with numeric row
 * keys and RFM counts; 0.40 GB at 200,000 customers). The rescoring walks the customers again
 * by id range, reading each page's summaries under its profile locks (as it must, to include
 * orders committed meanwhile). The fit itself runs as steps that give the event loop a turn every
 * few ms, so requests and ingestion go on.
 */
export async function fitAndRescore(
  db: Db,
  settingsStore: SettingsStore,
  workspaceId: string,
  req: FitRequest = {},
): Promise<FitOutcome> {
  const asOf = req.asOf ?? new Date();
  const fittedAt = new Date();
  const yieldNow = createYielder();
  const t0 = performance.now();
  let t1 = t0;
  // In a function of its own so that nothing of the fit's condensed data outlives it (the
  // rescoring, which follows, keeps only the stored fit).
  const fitOnly = async () => {
    const acc = createFitAccumulator();
    const pages = streamWorkspaceSummaries(db, workspaceId, asOf, undefined, RESCORE_PARALLEL[db.engine]);
    for await (const page of pages) {
      for (const row of page) {
        acc.add(toSummary(row));
        if (yieldNow.due()) await yieldNow();
      }
    }
    const { data, rfm } = acc.finish();
    t1 = performance.now();
    const models = await runCooperatively(
      fitWorkspaceModelsSteps(data, { model: req.model ?? 'mbg_nbd' }),
      yieldNow,
    );
    const stored = storedFit(newSortableId('fit'), asOf, fittedAt, models, data, rfm);
    await db.transaction(async (tx) => {
      await repo.insertFit(tx, toFitRows(workspaceId, stored));
      await rescoring.resetChanges(tx, workspaceId, data.customers);
    });
    return stored;
  };
  const fit = await fitOnly();
  const t2 = performance.now();
  const timings = () => ({ summariesMs: t1 - t0, fitMs: t2 - t1, rescoreMs: performance.now() - t2 });
  const settings = await readScoreSettings(settingsStore, db, workspaceId);
  const score = createSummaryScorer(fit, settings);
  let rescored = 0;
  let escalated = 0;
  const chunk = (ids: readonly string[], range?: { after: string; last: string }) =>
    db.transaction(async (tx) => {
      // Shared: this fit's other chunks may run meanwhile (disjoint profiles); the per-order
      // rescoring, exclusive, waits for them and they for it.
      await repo.lockWorkspaceScoresShared(tx, workspaceId);
      if ((await repo.currentFitId(tx, workspaceId)) !== fit.fitId) return false;
      const r = await rescoreProfiles(tx, workspaceId, fit, ids, asOf, settings, {
        score,
        ...(range && { range }),
      });
      rescored += r.scored;
      escalated += r.escalated;
      return true;
    });
  const incomplete = () => ({ fit, rescored, escalated, complete: false, timings: timings() });
  const size = FIT_RESCORE_CHUNK[db.engine];
  // The customers by id, a page per transaction, RESCORE_PARALLEL pages at a time (the pages are
  // listed one after the other). A customer whose first order commits after its page was listed
  // is left to the per-order rescoring, which that order queued.
  let after = FIRST_PROFILE_ID;
  let listed = false;
  let stopped = false;
  let listing: Promise<unknown> = Promise.resolve();
  const nextPage = async () => {
    if (listed || stopped) return null;
    const ids = await listCustomerPage(db, workspaceId, asOf, after, size);
    if (ids.length < size) listed = true;
    if (ids.length === 0) return null;
    const range = { after, last: ids[ids.length - 1]! };
    after = range.last;
    return { ids, range };
  };
  const takePage = () => {
    const page = listing.then(nextPage);
    listing = page.catch(() => {});
    return page;
  };
  const work = async () => {
    try {
      for (let page = await takePage(); page && !stopped; page = await takePage()) {
        if (!(await chunk(page.ids, page.range))) stopped = true;
      }
    } catch (err) {
      stopped = true;
      throw err;
    }
  };
  await Promise.all(Array.from({ length: FIT_RESCORE_PARALLEL[db.engine] }, work));
  if (stopped) return incomplete();
  // Profiles scored by an earlier fit that this one did not reach: no order by asOf (cleared), or a
  // first order committed after its page was listed (scored now).
  for (;;) {
    const stale = await repo.listScoredBefore(db, workspaceId, fit.fitId, size);
    if (stale.length === 0) break;
    if (!(await chunk(stale))) return incomplete();
  }
  return { fit, rescored, escalated, complete: true, timings: timings() };
}

/** The workspace's current fit, or null before its first. */
export async function currentFit(db: Db, workspaceId: string): Promise<StoredFit | null> {
  return fromFitRows(await repo.readCurrentFit(db, workspaceId));
}

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
