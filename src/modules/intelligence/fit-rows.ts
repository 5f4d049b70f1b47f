import type { FitRow } from './intelligence.repo';
import type { WorkspaceModels } from './models';
import { RFM_MODEL, type RfmCuts, type StoredFit } from './scoring';

/** A workspace fit as rows of model_fits and back, pure: one row per model (purchase, spend, RFM). */

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
