/**
 * The pure glue between stored fits and the models (./models): RFM cut points, the records a fit is
 * stored as, the models rebuilt from them, and one profile's scores. No I/O.
 */

import type { FitRow } from './intelligence.repo';
import {
  type CustomerSummary,
  fitWorkspaceModels,
  labelRfmSegment,
  type PurchaseModelName,
  type RfmScores,
  type RfmSegment,
  scoreCustomer,
  toRfmInput,
  type WorkspaceModels,
} from './models';
import type { SummaryRow } from './summaries.repo';

export const RFM_MODEL = 'rfm_quintiles';

/**
 * RFM cut points per dimension (larger is better; recency negated). With n customers, the exact
 * score min(5, 1 + floor(5w/(n − 1))) (models/rfm.ts) is ≥ s exactly when w ≥ k_s = ⌈(s − 1)(n − 1)/5⌉,
 * that is when the value exceeds the k_s-th smallest value. Storing those four values per
 * dimension reproduces the fit-time scores of every customer, and scores a customer rescored between
 * fits against the workspace as it was at the fit, without reading every other customer again.
 */
export interface RfmCuts {
  n: number;
  r: number[];
  f: number[];
  m: number[];
}

function cutsOf(values: number[]): number[] {
  const n = values.length;
  if (n <= 1) return [];
  const sorted = Float64Array.from(values).sort();
  const cuts: number[] = [];
  for (let s = 2; s <= 5; s++) cuts.push(sorted[Math.ceil(((s - 1) * (n - 1)) / 5) - 1]!);
  return cuts;
}

export function computeRfmCuts(summaries: readonly CustomerSummary[]): RfmCuts {
  const inputs = summaries.map(toRfmInput);
  return {
    n: inputs.length,
    r: cutsOf(inputs.map((i) => -i.recencyDays)),
    f: cutsOf(inputs.map((i) => i.frequency)),
    m: cutsOf(inputs.map((i) => i.monetary)),
  };
}

const scoreBy = (cuts: readonly number[], v: number) =>
  (1 + cuts.filter((c) => v > c).length) as RfmScores['r'];

export function scoreRfmWithCuts(
  cuts: RfmCuts,
  summary: CustomerSummary,
): { scores: RfmScores; segment: RfmSegment } {
  const i = toRfmInput(summary);
  const scores = {
    r: scoreBy(cuts.r, -i.recencyDays),
    f: scoreBy(cuts.f, i.frequency),
    m: scoreBy(cuts.m, i.monetary),
  };
  return { scores, segment: labelRfmSegment(scores) };
}

export const toSummary = (r: SummaryRow): CustomerSummary => ({
  x: r.x,
  tx: r.tx,
  T: r.T,
  zbar: r.zbar,
  totalSpend: r.total_spend,
  daysSinceLast: r.days_since_last,
});

/** A workspace fit as stored and used: the models, the RFM cut points, and where they came from. */
export interface StoredFit {
  fitId: string;
  asOf: Date;
  fittedAt: Date;
  models: WorkspaceModels;
  rfm: RfmCuts;
  /** Customers the spend model could use (x > 0 and z̄ > 0). */
  spendCustomers: number;
}

export function fitModels(
  fitId: string,
  asOf: Date,
  summaries: readonly CustomerSummary[],
  model: PurchaseModelName,
): StoredFit {
  return {
    fitId,
    asOf,
    fittedAt: new Date(),
    models: fitWorkspaceModels(summaries, { model }),
    rfm: computeRfmCuts(summaries),
    spendCustomers: summaries.filter((c) => c.x > 0 && c.zbar > 0).length,
  };
}

/** The three rows a fit is stored as (model_fits). */
export function toFitRows(workspaceId: string, fit: StoredFit): Omit<FitRow, 'fitted_at'>[] {
  const { purchase, spend, name, customers } = fit.models;
  const base = { fit_id: fit.fitId, workspace_id: workspaceId, name, as_of: fit.asOf };
  const reason = (c: object) => ('reason' in c && typeof c.reason === 'string' ? { reason: c.reason } : {});
  return [
    {
      ...base,
      kind: 'purchase',
      model: purchase.name,
      params: { ...purchase.params, ...reason(purchase) },
      log_likelihood: purchase.logLikelihood,
      customers,
      // A purchase fit that did not converge falls back, and says so in its reason.
      converged: !('reason' in purchase && /converge/.test(purchase.reason)),
    },
    {
      ...base,
      kind: 'spend',
      model: spend.name,
      params: { ...spend.params, ...reason(spend) },
      log_likelihood: spend.logLikelihood,
      customers: fit.spendCustomers,
      converged: !('reason' in spend && /converge/.test(spend.reason)),
    },
    {
      ...base,
      kind: 'rfm',
      model: RFM_MODEL,
      params: { ...fit.rfm },
      log_likelihood: null,
      customers,
      converged: true,
    },
  ];
}

/** The stored rows back into a fit; null when the workspace was never fitted. */
export function fromFitRows(rows: readonly FitRow[]): StoredFit | null {
  const byKind = new Map(rows.map((r) => [r.kind, r]));
  const p = byKind.get('purchase');
  const s = byKind.get('spend');
  const r = byKind.get('rfm');
  if (!p || !s || !r) return null;
  const strip = (params: Record<string, unknown>) => {
    const { reason, ...rest } = params;
    return { params: rest, reason: typeof reason === 'string' ? reason : undefined };
  };
  const ps = strip(p.params);
  const ss = strip(s.params);
  const models = {
    name: p.name,
    customers: p.customers,
    purchase: { name: p.model, params: ps.params, logLikelihood: p.log_likelihood, reason: ps.reason },
    spend: { name: s.model, params: ss.params, logLikelihood: s.log_likelihood, reason: ss.reason },
  } as unknown as WorkspaceModels;
  return {
    fitId: p.fit_id,
    asOf: p.as_of,
    fittedAt: p.fitted_at,
    models,
    rfm: r.params as unknown as RfmCuts,
    spendCustomers: s.customers,
  };
}

export interface ScoreSettings {
  churnThreshold: number;
  discountRate: number;
  horizonDays: number;
}

export function scoreSummary(fit: StoredFit, summary: CustomerSummary, settings: ScoreSettings) {
  const score = scoreCustomer(fit.models, summary, {
    horizonDays: settings.horizonDays,
    annualDiscountRate: settings.discountRate,
    churnThreshold: settings.churnThreshold,
  });
  return { ...score, rfm: scoreRfmWithCuts(fit.rfm, summary) };
}
