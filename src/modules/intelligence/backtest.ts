import { createYielder } from '../../platform/cooperate';
import type { Db } from '../../platform/db';
import type { SettingsStore } from '../workspaces';
import * as backtests from './backtests.repo';
import { toFitRows } from './fit-rows';
import * as repo from './intelligence.repo';
import { readScoreSettings } from './intelligence.settings';
import {
  createHoldoutEvaluation,
  createHoldoutPredictor,
  type HoldoutEvaluation,
  type PurchaseModelName,
} from './models';
import { createSummaryScorer, type StoredFit, toScoreValues, toSummary } from './scoring';
import { FIRST_PROFILE_ID, listCustomerPage, readHoldoutRange, readSummaryRange } from './summaries.repo';
import { FIT_RESCORE_CHUNK, fitWorkspace } from './workspace-fit';

/**
 * Back-tests: a fit as of a past date, held against what happened after it. An analyst's back-test
 * must never change what production sees, so it is kept apart from the live fit by construction:
 *
 * - its fit rows are stored marked `backtest`, which the current-fit queries skip, so it never
 *   becomes the fit that the per-order rescoring, the reads or the next fit build on;
 * - its per-profile scores go to backtest_scores under its fit id; customer_scores, the profiles'
 *   score columns and the escalation flags are never written, so no segment moves;
 * - it writes nothing to the outbox: no churn.risk_escalated, no webhook.
 *
 * Its holdout is the orders after as_of up to holdout_end (default now): each customer of the fit
 * gets the model's E[purchase days in the holdout | x, t_x, T] beside the purchase days they
 * actually made, evaluated as totals, per customer (MAE, correlation) and by calibration purchases
 * 0…7+ (models/holdout.ts).
 */

/** Back-tests kept per workspace: a new one removes the oldest beyond this (its scores with it). */
export const BACKTESTS_KEPT = 10;

/** Scores removed per statement when an old back-test goes. */
const DELETE_CHUNK = 10_000;

export interface BacktestRequest {
  model?: PurchaseModelName | undefined;
  asOf: Date;
  holdoutEnd: Date;
}

export interface BacktestOutcome {
  fit: StoredFit;
  /** Customers scored under the back-test's fit id. */
  scored: number;
  evaluation: HoldoutEvaluation;
}

const DAY_MS = 86_400_000;
const utcDay = (d: Date) => Math.floor(d.getTime() / DAY_MS);

/** The holdout's length in weeks: whole UTC days from as_of's day to holdout_end's, as the summaries count. */
export const holdoutWeeks = (asOf: Date, holdoutEnd: Date) => (utcDay(holdoutEnd) - utcDay(asOf)) / 7;

/**
 * Runs a back-test: fits on the orders at or before asOf (the live fit's code, stored apart), then
 * walks the fit's customers by id in pages (FIT_RESCORE_CHUNK: 10,000 on PostgreSQL, 1,000 on
 * PGlite), each page a few short statements (list, summaries, holdout counts, one insert) with no
 * transaction held between them, so the single PGlite connection is free between pages and a
 * workspace of any size costs memory for one page.
 */
export async function runBacktest(
  db: Db,
  settingsStore: SettingsStore,
  workspaceId: string,
  req: BacktestRequest,
): Promise<BacktestOutcome> {
  await pruneBacktests(db, workspaceId, BACKTESTS_KEPT - 1);
  const { fit } = await fitWorkspace(db, workspaceId, req.asOf, new Date(), req.model);
  await db.transaction(async (tx) => {
    await repo.insertFit(tx, toFitRows(workspaceId, fit, true));
    await backtests.insertBacktest(tx, workspaceId, fit.fitId, req.holdoutEnd);
  });
  const settings = await readScoreSettings(settingsStore, db, workspaceId);
  const score = createSummaryScorer(fit, settings);
  const weeks = holdoutWeeks(req.asOf, req.holdoutEnd);
  const predict = createHoldoutPredictor(fit.models, weeks);
  const evaluation = createHoldoutEvaluation();
  const yieldNow = createYielder();
  const size = FIT_RESCORE_CHUNK[db.engine];
  let scored = 0;
  for (let after = FIRST_PROFILE_ID; ; ) {
    const ids = await listCustomerPage(db, workspaceId, req.asOf, after, size);
    if (ids.length === 0) break;
    const last = ids[ids.length - 1]!;
    const [summaries, holdout] = await Promise.all([
      readSummaryRange(db, workspaceId, req.asOf, after, last),
      readHoldoutRange(db, workspaceId, req.asOf, req.holdoutEnd, after, last),
    ]);
    const rows: backtests.BacktestScoreRow[] = [];
    for (const row of summaries) {
      const summary = toSummary(row);
      const s = score(summary);
      const predicted = predict(summary);
      const actual = holdout.get(row.profile_id) ?? 0;
      evaluation.add(row.x, predicted, actual);
      rows.push(
        toScoreValues(row, s, {
          calibration_purchases: row.x,
          holdout_predicted: predicted,
          holdout_actual: actual,
        }),
      );
      if (yieldNow.due()) await yieldNow();
    }
    await backtests.insertBacktestScores(db, workspaceId, fit.fitId, rows);
    scored += rows.length;
    if (ids.length < size) break;
    after = last;
  }
  const result = evaluation.finish();
  await backtests.completeBacktest(db, workspaceId, fit.fitId, toEvaluationView(req, result));
  return { fit, scored, evaluation: result };
}

export type EvaluationView = ReturnType<typeof toEvaluationView>;

/** The evaluation as the API shows it and model_backtests stores it. */
export function toEvaluationView(req: { asOf: Date; holdoutEnd: Date }, e: HoldoutEvaluation) {
  return {
    holdout: {
      from: req.asOf.toISOString(),
      to: req.holdoutEnd.toISOString(),
      weeks: holdoutWeeks(req.asOf, req.holdoutEnd),
    },
    customers: e.customers,
    actual_purchases: e.actualPurchases,
    predicted_purchases: e.predictedPurchases,
    per_customer: { mean_absolute_error: e.meanAbsoluteError, correlation: e.correlation },
    by_calibration_purchases: e.byCalibrationPurchases.map((b) => ({
      repeat_purchases: b.repeatPurchases,
      customers: b.customers,
      actual_mean: b.actualMean,
      predicted_mean: b.predictedMean,
    })),
  };
}

/**
 * Removes the workspace's back-tests beyond the newest `keep`: scores first, in pages (a back-test
 * of a million customers is a million rows), then its own rows, so one interrupted here is still
 * listed and finished by the next.
 */
export async function pruneBacktests(db: Db, workspaceId: string, keep: number): Promise<number> {
  const old = await backtests.listBacktestsBeyond(db, workspaceId, keep);
  for (const fitId of old) {
    let deleted: number;
    do deleted = await backtests.deleteBacktestScores(db, workspaceId, fitId, DELETE_CHUNK);
    while (deleted > 0);
    await db.transaction((tx) => backtests.deleteBacktest(tx, workspaceId, fitId));
  }
  return old.length;
}
