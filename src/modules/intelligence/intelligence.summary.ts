import { type CursorCodec, type Page, type PageRequest, toPage } from '../../platform/cursor';
import type { Db } from '../../platform/db';
import { isStatementTimeout } from '../../platform/db/errors';
import { AppError } from '../../platform/errors';
import { iso } from '../../platform/http/envelope';
import { createSliceSizer } from '../../platform/slices';
import {
  CLV_BUCKET_EDGES,
  liveProfileSliceEnd,
  mergeScoreDistributions,
  readScoreDistributionSlice,
  readScoreDistributions,
  type ScoreDistributionRows,
} from '../profiles';
import * as backtests from './backtests.repo';
import * as repo from './intelligence.repo';
import { RFM_SEGMENTS } from './models/rfm';

/**
 * GET /intelligence/summary and GET /intelligence/backtests (docs/intelligence.md, "The workspace
 * at a glance"): what the console's Intelligence page draws, in one request each.
 */

/** The summary's time, as a calculation's (docs/api.md, "Budgets"): the server cancels past it. */
export const SUMMARY_BUDGET_MS = 10_000;

/**
 * On the embedded database the summary reads the workspace in slices of profiles sized by time
 * (platform/slices.ts), towards the 10 ms that segment refreshes and fits keep: the single
 * connection is free between two, so another workspace's ingest or read waits behind one slice,
 * not behind a pass over the whole workspace (0.3 s at 100,000 scored profiles).
 */
const PGLITE_SUMMARY_SLICES = createSliceSizer({ targetMs: 10, min: 50, max: 50_000, initial: 500 });

const overBudget = (budgetMs: number) =>
  new AppError(
    'BUDGET_EXCEEDED',
    `the summary needed more than its budget of ${budgetMs / 1000} s (limit: summary time budget)`,
  );

/**
 * The RFM grid, the label counts and the CLV and churn-risk histograms of the workspace's scored
 * live profiles (their stored score columns, read through the profiles module), with the current
 * fit. PostgreSQL: two statements in one transaction on the caller's lane, each bounded by the
 * budget. PGlite (or a fixed `sliceSize`, for tests): slices, each its own statements, added up;
 * profiles rescored while it reads may be counted with their old or their new scores.
 */
export async function getSummary(
  db: Db,
  workspaceId: string,
  opts: { budgetMs?: number; sliceSize?: number } = {},
) {
  const budgetMs = opts.budgetMs ?? SUMMARY_BUDGET_MS;
  let d: ScoreDistributionRows;
  if (db.engine === 'pglite' || opts.sliceSize !== undefined) {
    d = await readInSlices(db, workspaceId, budgetMs, opts.sliceSize);
  } else {
    try {
      d = await db.transaction((tx) => readScoreDistributions(tx, workspaceId), {
        statementTimeoutMs: budgetMs,
      });
    } catch (err) {
      if (isStatementTimeout(err)) throw overBudget(budgetMs);
      throw err;
    }
  }
  const fit = (await repo.readCurrentFit(db, workspaceId)).find((r) => r.kind === 'purchase');
  const grid = [5, 4, 3, 2, 1].map((r) =>
    [1, 2, 3, 4, 5].map((f) => d.grid.find((c) => c.r === r && c.f === f)?.profiles ?? 0),
  );
  const edges = [0, ...CLV_BUCKET_EDGES];
  const bySegment = new Map(d.segments.map((s) => [s.segment, s.profiles]));
  const byClv = new Map(d.clv.map((b) => [b.bucket, b.profiles]));
  const byChurn = new Map(d.churn.map((b) => [b.bucket, b.profiles]));
  return {
    profiles_scored: d.stats.scored,
    current_fit: fit
      ? { fit_id: fit.fit_id, model: fit.name, fitted_at: iso(fit.fitted_at)!, as_of: iso(fit.as_of)! }
      : null,
    rfm: {
      grid,
      profiles_gridded: d.stats.gridded,
      segments: RFM_SEGMENTS.map((segment) => ({
        segment,
        profiles: bySegment.get(segment) ?? 0,
      })),
    },
    clv: {
      buckets: edges.map((from, i) => ({
        from,
        to: CLV_BUCKET_EDGES[i] ?? null,
        profiles: byClv.get(i) ?? 0,
      })),
      min: d.stats.clv_min,
      max: d.stats.clv_max,
      median: d.stats.clv_median,
      total: d.stats.clv_total,
    },
    churn_risk: {
      buckets: Array.from({ length: 10 }, (_, i) => ({
        from: i / 10,
        to: (i + 1) / 10,
        profiles: byChurn.get(i) ?? 0,
      })),
    },
  };
}

/** The distributions slice by slice, within the budget (checked between two slices). */
async function readInSlices(
  db: Db,
  workspaceId: string,
  budgetMs: number,
  fixedSize: number | undefined,
): Promise<ScoreDistributionRows> {
  const deadline = performance.now() + budgetMs;
  const parts: Parameters<typeof mergeScoreDistributions>[0][number][] = [];
  for (let after = 0; ; ) {
    if (performance.now() > deadline) throw overBudget(budgetMs);
    const size = fixedSize ?? PGLITE_SUMMARY_SLICES.size(workspaceId);
    const t0 = performance.now();
    const upTo = await liveProfileSliceEnd(db, workspaceId, after, size);
    parts.push(await readScoreDistributionSlice(db, workspaceId, { after, upTo }));
    if (upTo === null) break;
    // Only a full slice says how long a slice of this size takes.
    if (fixedSize === undefined) PGLITE_SUMMARY_SLICES.record(workspaceId, size, performance.now() - t0);
    after = upTo;
  }
  return mergeScoreDistributions(parts);
}

/** GET /intelligence/backtests: the workspace's back-tests, newest first, with their holdout figures. */
export async function listBacktests(
  db: Db,
  codec: CursorCodec,
  workspaceId: string,
  page: PageRequest,
): Promise<Page<ReturnType<typeof present>>> {
  const before = page.after ? String(page.after[0]) : null;
  const rows = await backtests.listBacktests(db, workspaceId, before, page.limit + 1);
  return toPage(codec, page, rows, (r) => [r.fit_id], present);
}

function present(r: backtests.BacktestListRow) {
  const ev = r.evaluation;
  return {
    fit_id: r.fit_id,
    model: r.model,
    name: r.name,
    as_of: iso(r.as_of)!,
    holdout_end: iso(r.holdout_end)!,
    created_at: iso(r.started_at)!,
    completed_at: iso(r.completed_at),
    holdout: ev && {
      weeks: ev.holdout.weeks,
      customers: ev.customers,
      actual_purchases: ev.actual_purchases,
      predicted_purchases: ev.predicted_purchases,
      mean_absolute_error: ev.per_customer.mean_absolute_error,
      correlation: ev.per_customer.correlation,
    },
  };
}
