import type { Queryable } from '../../platform/db';
import { isDataError } from '../../platform/db/errors';
import type { EvaluationView } from './backtest';
import { type ScoreValues, scoreArrays } from './intelligence.repo';

/**
 * SQL of the back-tests' own tables (migrations/0027_backtests.sql): model_backtests (a back-test's
 * holdout and evaluation) and backtest_scores (its per-profile scores). Their fit rows are in
 * model_fits, marked `backtest` (intelligence.repo.ts).
 */

export interface BacktestRow {
  fit_id: string;
  holdout_end: Date;
  evaluation: EvaluationView | null;
  started_at: Date;
  completed_at: Date | null;
}

export async function insertBacktest(
  q: Queryable,
  workspaceId: string,
  fitId: string,
  holdoutEnd: Date,
): Promise<void> {
  await q.query('INSERT INTO model_backtests (workspace_id, fit_id, holdout_end) VALUES ($1, $2, $3)', [
    workspaceId,
    fitId,
    holdoutEnd,
  ]);
}

export async function completeBacktest(
  q: Queryable,
  workspaceId: string,
  fitId: string,
  evaluation: EvaluationView,
): Promise<void> {
  await q.query(
    `UPDATE model_backtests SET evaluation = $3::jsonb, completed_at = now()
      WHERE workspace_id = $1 AND fit_id = $2`,
    [workspaceId, fitId, JSON.stringify(evaluation)],
  );
}

export async function readBacktest(
  q: Queryable,
  workspaceId: string,
  fitId: string,
): Promise<BacktestRow | null> {
  const { rows } = await q.query<BacktestRow>(
    `SELECT fit_id, holdout_end, evaluation, started_at, completed_at FROM model_backtests
      WHERE workspace_id = $1 AND fit_id = $2`,
    [workspaceId, fitId],
  );
  return rows[0] ?? null;
}

/** The workspace's back-tests after the newest `keep`, oldest last (those to remove). */
export async function listBacktestsBeyond(
  q: Queryable,
  workspaceId: string,
  keep: number,
): Promise<string[]> {
  const { rows } = await q.query<{ fit_id: string }>(
    `SELECT fit_id FROM model_backtests WHERE workspace_id = $1 ORDER BY fit_id COLLATE "C" DESC OFFSET $2`,
    [workspaceId, keep],
  );
  return rows.map((r) => r.fit_id);
}

/** Deletes up to `limit` of a back-test's scores; answers how many went. */
export async function deleteBacktestScores(
  q: Queryable,
  workspaceId: string,
  fitId: string,
  limit: number,
): Promise<number> {
  const { rows } = await q.query<{ n: number }>(
    `WITH gone AS (
       DELETE FROM backtest_scores WHERE fit_id = $2 AND profile_id IN (
         SELECT profile_id FROM backtest_scores WHERE fit_id = $2 AND workspace_id = $1
          ORDER BY profile_id LIMIT $3)
       RETURNING 1)
     SELECT count(*)::int AS n FROM gone`,
    [workspaceId, fitId, limit],
  );
  return rows[0]!.n;
}

/** A back-test's own rows, once its scores are gone: it is no longer found. */
export async function deleteBacktest(q: Queryable, workspaceId: string, fitId: string): Promise<void> {
  await q.query('DELETE FROM model_fits WHERE workspace_id = $1 AND fit_id = $2 AND backtest', [
    workspaceId,
    fitId,
  ]);
  await q.query('DELETE FROM model_backtests WHERE workspace_id = $1 AND fit_id = $2', [workspaceId, fitId]);
}

/** A profile's scores under a back-test: what a live score holds (no escalation), and its holdout. */
export type BacktestScoreRow = Omit<ScoreValues, 'escalated'> & {
  /** Repeat purchase days by as_of (x). */
  calibration_purchases: number;
  holdout_predicted: number;
  holdout_actual: number;
};

/**
 * One page of a back-test's scores, in one statement (column arrays, as the live scores). The
 * rows come in profile order, so the foreign key's row locks are taken in the one lock order. Only
 * profiles that still exist are written: one erased since the page was read is skipped, and one
 * erased while this statement runs fails its key check, so the page is sent once more (it then
 * skips that profile).
 */
export async function insertBacktestScores(
  q: Queryable,
  workspaceId: string,
  fitId: string,
  rows: readonly BacktestScoreRow[],
): Promise<void> {
  if (rows.length === 0) return;
  const column = <K extends keyof BacktestScoreRow>(k: K) => rows.map((r) => r[k]);
  const send = () =>
    q.query(
      `INSERT INTO backtest_scores (fit_id, profile_id, workspace_id, p_alive, expected_purchases,
              expected_order_value, predicted_clv, churn_risk_score, days_since_last_order, horizon_days, currency,
              rfm_segment, calibration_purchases, holdout_predicted, holdout_actual)
       SELECT $2, r.profile_id, $1, r.p_alive, r.expected_purchases, r.expected_order_value, r.predicted_clv,
              r.churn_risk_score, r.days_since_last_order, r.horizon_days, r.currency, r.rfm_segment,
              r.calibration_purchases, r.holdout_predicted, r.holdout_actual
         FROM unnest($3::uuid[], $4::float8[], $5::float8[], $6::float8[], $7::float8[], $8::float8[], $9::int[],
                     $10::int[], $11::text[], $12::text[], $13::int[], $14::float8[], $15::int[])
           AS r(profile_id, p_alive, expected_purchases, expected_order_value, predicted_clv, churn_risk_score,
                days_since_last_order, horizon_days, currency, rfm_segment, calibration_purchases,
                holdout_predicted, holdout_actual)
        WHERE EXISTS (SELECT 1 FROM profiles p WHERE p.id = r.profile_id)
        ORDER BY r.profile_id`,
      [
        workspaceId,
        fitId,
        ...scoreArrays(rows),
        column('calibration_purchases'),
        column('holdout_predicted'),
        column('holdout_actual'),
      ],
    );
  try {
    await send();
  } catch (err) {
    if (!isDataError(err)) throw err;
    await send();
  }
}

export async function readBacktestScore(
  q: Queryable,
  workspaceId: string,
  fitId: string,
  profileId: string,
): Promise<BacktestScoreRow | null> {
  const { rows } = await q.query<BacktestScoreRow>(
    'SELECT * FROM backtest_scores WHERE fit_id = $2 AND profile_id = $3 AND workspace_id = $1',
    [workspaceId, fitId, profileId],
  );
  return rows[0] ?? null;
}

export interface BacktestListRow extends BacktestRow {
  model: string;
  name: string;
  as_of: Date;
}

/**
 * One page of the workspace's back-tests, newest first (fit ids sort by time), with their purchase
 * model's row; at most BACKTESTS_KEPT exist (backtest.ts), so this is a few primary-key rows.
 */
export async function listBacktests(
  q: Queryable,
  workspaceId: string,
  beforeFitId: string | null,
  limit: number,
): Promise<BacktestListRow[]> {
  const { rows } = await q.query<BacktestListRow>(
    `SELECT b.fit_id, b.holdout_end, b.evaluation, b.started_at, b.completed_at, f.model, f.name, f.as_of
       FROM model_backtests b
       JOIN model_fits f ON f.workspace_id = b.workspace_id AND f.fit_id = b.fit_id AND f.kind = 'purchase'
      WHERE b.workspace_id = $1 AND ($2::text IS NULL OR b.fit_id COLLATE "C" < $2)
      ORDER BY b.fit_id COLLATE "C" DESC
      LIMIT $3`,
    [workspaceId, beforeFitId, limit],
  );
  return rows;
}

/** Erasure: every back-test's scores of these profiles go (the back-test keeps its evaluation). */
export async function deleteBacktestScoresOf(
  q: Queryable,
  workspaceId: string,
  profileIds: readonly string[],
): Promise<number> {
  const { rowCount } = await q.query(
    'DELETE FROM backtest_scores WHERE workspace_id = $1 AND profile_id = ANY($2::uuid[])',
    [workspaceId, profileIds],
  );
  return rowCount;
}

/** Every back-test's scores of these profiles (the access export). */
export async function backtestScoresOf(
  q: Queryable,
  workspaceId: string,
  profileIds: readonly string[],
): Promise<Array<Record<string, unknown>>> {
  const { rows } = await q.query<Record<string, unknown>>(
    `SELECT * FROM backtest_scores WHERE workspace_id = $1 AND profile_id = ANY($2::uuid[])
      ORDER BY fit_id, profile_id`,
    [workspaceId, profileIds],
  );
  return rows;
}
