import type { Db } from '../../platform/db';
import { notFound, validationError } from '../../platform/errors';
import { iso } from '../../platform/http/envelope';
import { resolveProfileId } from '../profiles';
import type { SettingsStore } from '../workspaces';
import { runBacktest } from './backtest';
import * as backtests from './backtests.repo';
import { fromFitRows } from './fit-rows';
import { enqueueScore } from './intelligence.jobs';
import * as repo from './intelligence.repo';
import { fitAndRescore } from './intelligence.service';
import { readScoreSettings } from './intelligence.settings';
import { classifyChurnRisk, type PurchaseModelName } from './models';
import type { StoredFit } from './scoring';

/** What the intelligence endpoints answer (docs/intelligence.md), from the stored scores and fits. */

/** What the reads show of a profile's scores, live or under a back-test. */
type ScoreView = Omit<repo.ScoreRow, 'profile_id' | 'rfm_segment' | 'escalated'>;

const modelRef = (fit: StoredFit | null) =>
  fit && {
    name: fit.models.name,
    fitted_at: iso(fit.fittedAt)!,
    as_of: iso(fit.asOf)!,
    params: { purchase: fit.models.purchase.params, spend: fit.models.spend.params },
  };

/**
 * The profile's live scores and the fit they came from (between a new fit and its rescoring
 * reaching this profile that is still the previous one); a merged-away id reads its survivor; else
 * 404. With `backtestId`, its scores under that back-test of the workspace (404 if there is none),
 * which are as the back-test scored the profiles: a profile merged away since reads its survivor's.
 */
async function readScored(db: Db, workspaceId: string, id: string, backtestId?: string) {
  const profileId = await resolveProfileId(db, workspaceId, id);
  if (backtestId !== undefined) {
    const backtest = await backtests.readBacktest(db, workspaceId, backtestId);
    if (!backtest) throw notFound('back-test');
    const fit = fromFitRows(await repo.readFit(db, workspaceId, backtestId));
    const row = await backtests.readBacktestScore(db, workspaceId, backtestId, profileId);
    const score: ScoreView | null = row && fit ? { ...row, fit_id: backtestId, as_of: fit.asOf } : null;
    const holdout = row ? { predicted: row.holdout_predicted, actual: row.holdout_actual } : null;
    return { profileId, score, fit, holdout };
  }
  const score: ScoreView | null = await repo.readScore(db, workspaceId, profileId);
  const rows = score
    ? await repo.readFit(db, workspaceId, score.fit_id)
    : await repo.readCurrentFit(db, workspaceId);
  return { profileId, score, fit: fromFitRows(rows), holdout: undefined };
}

export async function getClv(
  db: Db,
  settings: SettingsStore,
  workspaceId: string,
  id: string,
  fitId?: string,
) {
  const { profileId, score, fit, holdout } = await readScored(db, workspaceId, id, fitId);
  const s = await readScoreSettings(settings, db, workspaceId);
  return {
    profile_id: profileId,
    predicted_clv: score?.predicted_clv ?? null,
    currency: score?.currency ?? null,
    horizon_days: score?.horizon_days ?? s.horizonDays,
    expected_purchases: score?.expected_purchases ?? null,
    expected_order_value: score?.expected_order_value ?? null,
    p_alive: score?.p_alive ?? null,
    as_of: score ? iso(score.as_of) : null,
    model: modelRef(fit),
    ...(holdout !== undefined && { holdout }),
  };
}

export async function getChurn(
  db: Db,
  settings: SettingsStore,
  workspaceId: string,
  id: string,
  fitId?: string,
) {
  const { profileId, score, fit } = await readScored(db, workspaceId, id, fitId);
  const { churnThreshold } = await readScoreSettings(settings, db, workspaceId);
  return {
    profile_id: profileId,
    churn_risk_score: score?.churn_risk_score ?? null,
    risk_level: score ? classifyChurnRisk(score.churn_risk_score, churnThreshold) : null,
    p_alive: score?.p_alive ?? null,
    days_since_last_order: score?.days_since_last_order ?? null,
    threshold: churnThreshold,
    as_of: score ? iso(score.as_of) : null,
    model: modelRef(fit),
  };
}

const viewFit = (r: repo.FitRow) => ({
  fit_id: r.fit_id,
  kind: r.kind,
  model: r.model,
  name: r.name,
  params: r.params,
  standard_errors: r.standard_errors,
  log_likelihood: r.log_likelihood,
  customers: r.customers,
  converged: r.converged,
  fitted_at: iso(r.fitted_at)!,
  as_of: iso(r.as_of)!,
});

/** GET /intelligence/models: the components of the current (live) fit (purchase, spend, RFM cut points). */
export async function listModels(db: Db, workspaceId: string) {
  return (await repo.readCurrentFit(db, workspaceId)).map(viewFit);
}

/**
 * GET /intelligence/models/{fit_id}: one fit, live or back-test, as POST /intelligence/models/fit
 * answered it (the purchase model with the spend model beside it, and a back-test's evaluation).
 */
export async function getFit(db: Db, workspaceId: string, fitId: string) {
  const rows = await repo.readFit(db, workspaceId, fitId);
  const purchase = rows.find((x) => x.kind === 'purchase');
  const spend = rows.find((x) => x.kind === 'spend');
  if (!purchase || !spend) throw notFound('fit');
  const backtest = purchase.backtest ? await backtests.readBacktest(db, workspaceId, fitId) : null;
  const component = (x: repo.FitRow) => ({
    model: x.model,
    params: x.params,
    standard_errors: x.standard_errors,
    log_likelihood: x.log_likelihood,
    customers: x.customers,
  });
  return {
    fit_id: purchase.fit_id,
    backtest: purchase.backtest,
    ...component(purchase),
    name: purchase.name,
    converged: purchase.converged,
    fitted_at: iso(purchase.fitted_at)!,
    as_of: iso(purchase.as_of)!,
    spend: component(spend),
    evaluation: backtest?.evaluation ?? null,
  };
}

/** Earliest as_of accepted: order times are stored from the Unix epoch on. */
const EPOCH = 0;
/**
 * A client clock slightly ahead of ours is not "the future", and an as_of within this of now is the
 * live fit (as of now), not a back-test.
 */
export const CLOCK_SKEW_MS = 60_000;

function parseMoment(value: string | undefined, path: string, now: number): Date | undefined {
  if (value === undefined) return undefined;
  const ms = Date.parse(value);
  if (!Number.isFinite(ms)) throw validationError(path, 'must be an ISO 8601 date-time');
  if (ms < EPOCH) throw validationError(path, 'must not be before 1970-01-01T00:00:00Z');
  if (ms > now + CLOCK_SKEW_MS) throw validationError(path, 'must not be in the future');
  return new Date(ms);
}

export type FitPlan =
  | { backtest: false; model: PurchaseModelName | undefined }
  | { backtest: true; model: PurchaseModelName | undefined; asOf: Date; holdoutEnd: Date };

/**
 * What a fit request asks for: the live fit (no as_of, or one within CLOCK_SKEW_MS of now), or a
 * back-test (as_of further in the past) with its holdout up to holdout_end (default now).
 */
export function planFit(
  body: {
    model?: PurchaseModelName | undefined;
    as_of?: string | undefined;
    holdout_end?: string | undefined;
  },
  now = Date.now(),
): FitPlan {
  const asOf = parseMoment(body.as_of, '/as_of', now);
  const holdoutEnd = parseMoment(body.holdout_end, '/holdout_end', now);
  if (!asOf || asOf.getTime() >= now - CLOCK_SKEW_MS) {
    if (holdoutEnd) throw validationError('/holdout_end', 'needs an as_of in the past (a back-test)');
    return { backtest: false, model: body.model };
  }
  const end = holdoutEnd ?? new Date(now);
  const DAY_MS = 86_400_000;
  if (Math.floor(end.getTime() / DAY_MS) <= Math.floor(asOf.getTime() / DAY_MS)) {
    throw validationError('/holdout_end', 'must be on a later UTC day than as_of');
  }
  return { backtest: true, model: body.model, asOf, holdoutEnd: end };
}

/**
 * POST /intelligence/models/fit: the live fit (rescoring every profile as of now) or a back-test
 * (scored and evaluated under its own fit id); answers the fit as GET /intelligence/models/{fit_id}
 * does, with the number of profiles it scored.
 */
export async function fitNow(
  db: Db,
  settings: SettingsStore,
  workspaceId: string,
  body: {
    model?: PurchaseModelName | undefined;
    as_of?: string | undefined;
    holdout_end?: string | undefined;
  },
) {
  const plan = planFit(body);
  let fitId: string;
  let rescored: number;
  if (plan.backtest) {
    const r = await runBacktest(db, settings, workspaceId, plan);
    fitId = r.fit.fitId;
    rescored = r.scored;
  } else {
    const r = await fitAndRescore(db, settings, workspaceId, { model: plan.model });
    await enqueueScore(db, workspaceId);
    fitId = r.fit.fitId;
    rescored = r.rescored;
  }
  return { ...(await getFit(db, workspaceId, fitId)), rescored };
}
