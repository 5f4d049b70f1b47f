import type { Db } from '../../platform/db';
import type { SettingsStore } from '../workspaces';
import { fromFitRows, toFitRows } from './fit-rows';
import * as repo from './intelligence.repo';
import { readScoreSettings } from './intelligence.settings';
import type { PurchaseModelName } from './models';
import { rescoreProfiles } from './rescore';
import * as rescoring from './rescoring.repo';
import { createSummaryScorer, type StoredFit } from './scoring';
import { FIRST_PROFILE_ID, listCustomerPage } from './summaries.repo';
import { FIT_RESCORE_CHUNK, FIT_RESCORE_PARALLEL, fitPages, fitWorkspace } from './workspace-fit';

/** A live fit is always as of now: a fit as of a past date is a back-test (backtest.ts), never live. */
export interface FitRequest {
  model?: PurchaseModelName | undefined;
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
 * The live fit: fits the workspace's models on its completed orders as of now, stores the fit as
 * the current one, then rescores every customer as of that moment in chunks (and clears the scores
 * of profiles with no completed order any more), writing churn escalations to the outbox. It takes
 * no date: a fit as of a past date is a back-test (backtest.ts), which touches none of what
 * production sees. The default purchase model is mbg_nbd (docs/intelligence.md); too
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
  const asOf = new Date();
  const fittedAt = asOf;
  const t0 = performance.now();
  let t1 = t0;
  // In a function of its own so that nothing of the fit's condensed data outlives it (the
  // rescoring, which follows, keeps only the stored fit).
  const fitOnly = async () => {
    const { fit: stored, customers, readMs } = await fitWorkspace(db, workspaceId, asOf, fittedAt, req.model);
    t1 = t0 + readMs;
    await db.transaction(async (tx) => {
      await repo.insertFit(tx, toFitRows(workspaceId, stored));
      await rescoring.resetChanges(tx, workspaceId, customers);
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
  const slicer = fitPages(db, workspaceId, 'rescore');
  const pageSize = () => slicer?.size() ?? FIT_RESCORE_CHUNK[db.engine];
  const chunk = async (ids: readonly string[], range?: { after: string; last: string }) => {
    const t = performance.now();
    const went = await rescoreChunk(ids, range);
    slicer?.record(ids.length, performance.now() - t);
    return went;
  };
  const rescoreChunk = (ids: readonly string[], range?: { after: string; last: string }) =>
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
  // The customers by id, a page per transaction, RESCORE_PARALLEL pages at a time (the pages are
  // listed one after the other). A customer whose first order commits after its page was listed
  // is left to the per-order rescoring, which that order queued.
  let after = FIRST_PROFILE_ID;
  let listed = false;
  let stopped = false;
  let listing: Promise<unknown> = Promise.resolve();
  const nextPage = async () => {
    if (listed || stopped) return null;
    const size = pageSize();
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
    const stale = await repo.listScoredBefore(db, workspaceId, fit.fitId, pageSize());
    if (stale.length === 0) break;
    if (!(await chunk(stale))) return incomplete();
  }
  return { fit, rescored, escalated, complete: true, timings: timings() };
}

/** The workspace's current fit, or null before its first. */
export async function currentFit(db: Db, workspaceId: string): Promise<StoredFit | null> {
  return fromFitRows(await repo.readCurrentFit(db, workspaceId));
}
