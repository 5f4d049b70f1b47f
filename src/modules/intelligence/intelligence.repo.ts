import type { Queryable } from '../../platform/db';

/**
 * SQL of the intelligence module's own tables (migrations/0012_intelligence.sql), and nothing else;
 * the back-tests' own are in backtests.repo.ts.
 */

export type FitKind = 'purchase' | 'spend' | 'rfm';

export interface FitRow {
  fit_id: string;
  kind: FitKind;
  workspace_id: string;
  model: string;
  name: string;
  params: Record<string, unknown>;
  log_likelihood: number | null;
  customers: number;
  as_of: Date;
  fitted_at: Date;
  converged: boolean;
  /** A back-test's rows: never the workspace's current fit (backtest.ts). */
  backtest: boolean;
  standard_errors: Record<string, number> | null;
}

/**
 * Serializes the writers of one workspace's scores (the fit's rescoring chunks, the per-order
 * rescoring), for the rest of the transaction; taken before any profile lock.
 */
export async function lockWorkspaceScores(q: Queryable, workspaceId: string): Promise<void> {
  await q.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`cdp.intelligence:${workspaceId}`]);
}

/**
 * The same lock, shared: the chunks of one fit's rescoring take it so that several of them run at
 * once (their profiles are disjoint id ranges, each locked in id order), while the per-order
 * rescoring (exclusive) still never interleaves with them. A waiting exclusive request queues the
 * shared ones behind it, so the per-order rescoring is not starved by a long fit.
 */
export async function lockWorkspaceScoresShared(q: Queryable, workspaceId: string): Promise<void> {
  await q.query('SELECT pg_advisory_xact_lock_shared(hashtextextended($1, 0))', [
    `cdp.intelligence:${workspaceId}`,
  ]);
}

export async function insertFit(q: Queryable, rows: readonly Omit<FitRow, 'fitted_at'>[]): Promise<void> {
  await q.query(
    `INSERT INTO model_fits (fit_id, kind, workspace_id, model, name, params, log_likelihood, customers, as_of,
            converged, backtest, standard_errors)
     SELECT fit_id, kind, workspace_id, model, name, params, log_likelihood, customers, as_of, converged, backtest,
            standard_errors
       FROM jsonb_to_recordset($1::jsonb) AS r(fit_id text, kind text, workspace_id uuid, model text, name text,
            params jsonb, log_likelihood float8, customers int, as_of timestamptz, converged boolean,
            backtest boolean, standard_errors jsonb)`,
    [JSON.stringify(rows)],
  );
}

/**
 * The rows of the workspace's current fit, its latest live one (a back-test never is); empty when it
 * was never fitted.
 */
export async function readCurrentFit(q: Queryable, workspaceId: string): Promise<FitRow[]> {
  const { rows } = await q.query<FitRow>(
    `SELECT * FROM model_fits WHERE workspace_id = $1
        AND fit_id = (SELECT max(fit_id COLLATE "C") FROM model_fits WHERE workspace_id = $1 AND NOT backtest)
      ORDER BY kind`,
    [workspaceId],
  );
  return rows;
}

/** The rows of one fit (history is kept: a score names the fit it came from). */
export async function readFit(q: Queryable, workspaceId: string, fitId: string): Promise<FitRow[]> {
  const { rows } = await q.query<FitRow>(
    'SELECT * FROM model_fits WHERE workspace_id = $1 AND fit_id = $2 ORDER BY kind',
    [workspaceId, fitId],
  );
  return rows;
}

export async function currentFitId(q: Queryable, workspaceId: string): Promise<string | null> {
  const { rows } = await q.query<{ id: string | null }>(
    'SELECT max(fit_id COLLATE "C") AS id FROM model_fits WHERE workspace_id = $1 AND NOT backtest',
    [workspaceId],
  );
  return rows[0]?.id ?? null;
}

export interface ScoreRow {
  profile_id: string;
  fit_id: string;
  as_of: Date;
  p_alive: number;
  expected_purchases: number;
  expected_order_value: number;
  predicted_clv: number;
  churn_risk_score: number;
  days_since_last_order: number;
  horizon_days: number;
  currency: string;
  rfm_segment: string;
  escalated: boolean;
}

export async function readScore(
  q: Queryable,
  workspaceId: string,
  profileId: string,
): Promise<ScoreRow | null> {
  const { rows } = await q.query<ScoreRow>(
    'SELECT * FROM customer_scores WHERE workspace_id = $1 AND profile_id = $2',
    [workspaceId, profileId],
  );
  return rows[0] ?? null;
}

/** Which of these profiles have an escalation standing (churn.risk_escalated sent, not yet fallen back). */
/** The churn scores these profiles hold now (before a rescoring replaces them); unscored ones are absent. */
export async function readChurnScores(
  q: Queryable,
  workspaceId: string,
  profileIds: readonly string[],
): Promise<Map<string, number>> {
  if (profileIds.length === 0) return new Map();
  const { rows } = await q.query<{ profile_id: string; churn_risk_score: number | null }>(
    `SELECT s.profile_id, s.churn_risk_score FROM unnest($2::uuid[]) AS u(id)
       JOIN customer_scores s ON s.profile_id = u.id WHERE s.workspace_id = $1`,
    [workspaceId, profileIds],
  );
  return new Map(
    rows.filter((r) => r.churn_risk_score !== null).map((r) => [r.profile_id, r.churn_risk_score!]),
  );
}

export async function readEscalated(
  q: Queryable,
  workspaceId: string,
  profileIds: readonly string[],
): Promise<Set<string>> {
  // One primary-key probe per id, written as a join on unnest (estimated small) so that the planner
  // never prefers customer_scores_workspace_idx: with stale statistics during a workspace's first
  // fit it scanned the whole workspace per chunk, 31 s of a 1M-customer fit instead of 2 s.
  const { rows } = await q.query<{ profile_id: string }>(
    `SELECT s.profile_id FROM unnest($2::uuid[]) AS u(id) JOIN customer_scores s ON s.profile_id = u.id
      WHERE s.workspace_id = $1 AND s.escalated`,
    [workspaceId, profileIds],
  );
  return new Set(rows.map((r) => r.profile_id));
}

/** One profile's scores as rescoring computes them; the fit and the scoring date are the call's. */
export type ScoreValues = Omit<ScoreRow, 'fit_id' | 'as_of'> & {
  /** R·100 + F·10 + M, stored on the profile only (customer_scores keeps the label). */
  rfm_score?: number;
};

/**
 * Stores a rescoring's scores, one statement per chunk, the columns as arrays (unnest): PostgreSQL
 * reads a float8[] far faster than it takes apart a jsonb document of the same rows. The fit and
 * the date are one value per call, sent once: as columns
 * they were 10,000 equal dates per page, each formatted into the array parameter by pg. With the
 * keys-only lock (lockProfileKeys) that cut a 100k-customer fit's allocations by 13% and its peak
 * RSS by 45 MB (docs/benchmarks.md, "A fit's memory peak").
 */
export async function upsertScores(
  q: Queryable,
  workspaceId: string,
  scoredBy: { fitId: string; asOf: Date },
  rows: readonly ScoreValues[],
): Promise<void> {
  if (rows.length === 0) return;
  await q.query(
    `INSERT INTO customer_scores (profile_id, workspace_id, fit_id, as_of, p_alive, expected_purchases,
            expected_order_value, predicted_clv, churn_risk_score, days_since_last_order, horizon_days, currency,
            rfm_segment, escalated, scored_at)
     SELECT r.profile_id, $1, $2, $3, r.p_alive, r.expected_purchases, r.expected_order_value,
            r.predicted_clv, r.churn_risk_score, r.days_since_last_order, r.horizon_days, r.currency,
            r.rfm_segment, r.escalated, now()
       FROM unnest($4::uuid[], $5::float8[], $6::float8[], $7::float8[], $8::float8[], $9::float8[],
                   $10::int[], $11::int[], $12::text[], $13::text[], $14::boolean[])
         AS r(profile_id, p_alive, expected_purchases, expected_order_value, predicted_clv,
              churn_risk_score, days_since_last_order, horizon_days, currency, rfm_segment, escalated)
     ON CONFLICT (profile_id) DO UPDATE SET fit_id = excluded.fit_id, as_of = excluded.as_of,
            p_alive = excluded.p_alive, expected_purchases = excluded.expected_purchases,
            expected_order_value = excluded.expected_order_value, predicted_clv = excluded.predicted_clv,
            churn_risk_score = excluded.churn_risk_score, days_since_last_order = excluded.days_since_last_order,
            horizon_days = excluded.horizon_days, currency = excluded.currency, rfm_segment = excluded.rfm_segment,
            escalated = excluded.escalated, scored_at = excluded.scored_at`,
    [workspaceId, scoredBy.fitId, scoredBy.asOf, ...scoreArrays(rows), rows.map((r) => r.escalated)],
  );
}

/**
 * The columns both score tables hold (customer_scores, backtest_scores) as the arrays their INSERTs
 * unnest, in this order: profile_id (uuid), p_alive, expected_purchases, expected_order_value,
 * predicted_clv, churn_risk_score (float8), days_since_last_order, horizon_days (int), currency,
 * rfm_segment (text).
 */
export function scoreArrays(rows: readonly Omit<ScoreValues, 'escalated'>[]): unknown[][] {
  const column = <K extends keyof Omit<ScoreValues, 'escalated'>>(k: K) => rows.map((r) => r[k]);
  return [
    column('profile_id'),
    column('p_alive'),
    column('expected_purchases'),
    column('expected_order_value'),
    column('predicted_clv'),
    column('churn_risk_score'),
    column('days_since_last_order'),
    column('horizon_days'),
    column('currency'),
    column('rfm_segment'),
  ];
}

/** Scores of these profiles removed (no completed order by the scoring date any more). */
export async function deleteScores(
  q: Queryable,
  workspaceId: string,
  profileIds: readonly string[],
): Promise<void> {
  if (profileIds.length === 0) return;
  await q.query('DELETE FROM customer_scores WHERE workspace_id = $1 AND profile_id = ANY($2::uuid[])', [
    workspaceId,
    profileIds,
  ]);
}

/** Profiles scored by an earlier fit than this one (after its rescoring: those it did not reach). */
export async function listScoredBefore(
  q: Queryable,
  workspaceId: string,
  fitId: string,
  limit: number,
): Promise<string[]> {
  const { rows } = await q.query<{ profile_id: string }>(
    `SELECT profile_id FROM customer_scores WHERE workspace_id = $1 AND fit_id COLLATE "C" < $2 ORDER BY profile_id LIMIT $3`,
    [workspaceId, fitId, limit],
  );
  return rows.map((r) => r.profile_id);
}
