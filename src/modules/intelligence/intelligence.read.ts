import type { Db } from '../../platform/db';
import { validationError } from '../../platform/errors';
import { iso } from '../../platform/http/envelope';
import { resolveProfileId } from '../profiles';
import type { SettingsStore } from '../workspaces';
import { fromFitRows } from './fit-rows';
import { enqueueScore } from './intelligence.jobs';
import * as repo from './intelligence.repo';
import { fitAndRescore } from './intelligence.service';
import { readScoreSettings } from './intelligence.settings';
import { classifyChurnRisk, type PurchaseModelName } from './models';
import type { StoredFit } from './scoring';

/** What the intelligence endpoints answer (contract §8), from the stored scores and fits. */

const modelRef = (fit: StoredFit | null) =>
  fit && {
    name: fit.models.name,
    fitted_at: iso(fit.fittedAt)!,
    as_of: iso(fit.asOf)!,
    params: { purchase: fit.models.purchase.params, spend: fit.models.spend.params },
  };

/**
 * The profile's scores and the fit they came from (between a new fit and its rescoring reaching
 * this profile that is still the previous one); a merged-away id reads its survivor; else 404.
 */
async function readScored(db: Db, workspaceId: string, id: string) {
  const profileId = await resolveProfileId(db, workspaceId, id);
  const score = await repo.readScore(db, workspaceId, profileId);
  const rows = score
    ? await repo.readFit(db, workspaceId, score.fit_id)
    : await repo.readCurrentFit(db, workspaceId);
  return { profileId, score, fit: fromFitRows(rows) };
}

export async function getClv(db: Db, settings: SettingsStore, workspaceId: string, id: string) {
  const { profileId, score, fit } = await readScored(db, workspaceId, id);
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
  };
}

export async function getChurn(db: Db, settings: SettingsStore, workspaceId: string, id: string) {
  const { profileId, score, fit } = await readScored(db, workspaceId, id);
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
  kind: r.kind,
  model: r.model,
  name: r.name,
  params: r.params,
  log_likelihood: r.log_likelihood,
  customers: r.customers,
  converged: r.converged,
  fitted_at: iso(r.fitted_at)!,
  as_of: iso(r.as_of)!,
});

/** GET /intelligence/models: the components of the current fit (purchase, spend, RFM cut points). */
export async function listModels(db: Db, workspaceId: string) {
  return (await repo.readCurrentFit(db, workspaceId)).map(viewFit);
}

/** Earliest as_of accepted: order times are stored from the Unix epoch on. */
const EPOCH = 0;
/** A client clock slightly ahead of ours is not "the future". */
const CLOCK_SKEW_MS = 60_000;

export function parseAsOf(asOf: string | undefined): Date | undefined {
  if (asOf === undefined) return undefined;
  const ms = Date.parse(asOf);
  if (!Number.isFinite(ms)) throw validationError('/as_of', 'must be an ISO 8601 date-time');
  if (ms < EPOCH) throw validationError('/as_of', 'must not be before 1970-01-01T00:00:00Z');
  if (ms > Date.now() + CLOCK_SKEW_MS) throw validationError('/as_of', 'must not be in the future');
  return new Date(ms);
}

/** POST /intelligence/models/fit: fit now (as of as_of), rescore, answer the purchase fit with the spend fit beside it. */
export async function fitNow(
  db: Db,
  settings: SettingsStore,
  workspaceId: string,
  body: { model?: PurchaseModelName | undefined; as_of?: string | undefined },
) {
  const asOf = parseAsOf(body.as_of);
  const r = await fitAndRescore(db, settings, workspaceId, { model: body.model, asOf });
  await enqueueScore(db, workspaceId);
  const rows = await repo.readFit(db, workspaceId, r.fit.fitId);
  const purchase = rows.find((x) => x.kind === 'purchase')!;
  const spend = rows.find((x) => x.kind === 'spend')!;
  const component = (x: repo.FitRow) => ({
    model: x.model,
    params: x.params,
    log_likelihood: x.log_likelihood,
    customers: x.customers,
  });
  return {
    ...component(purchase),
    name: purchase.name,
    converged: purchase.converged,
    fitted_at: iso(purchase.fitted_at)!,
    as_of: iso(purchase.as_of)!,
    spend: component(spend),
    rescored: r.rescored,
  };
}
