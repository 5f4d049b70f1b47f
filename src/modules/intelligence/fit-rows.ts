import type { FitRow } from './intelligence.repo';
import type { WorkspaceModels } from './models';
import type { RejectedFit } from './models/workspace-models';
import { RFM_MODEL, type RfmCuts, type StoredFit } from './scoring';

/** A workspace fit as rows of model_fits and back, pure: one row per model (purchase, spend, RFM). */

/** The three rows a fit is stored as (model_fits); a back-test's are marked so. */
export function toFitRows(
  workspaceId: string,
  fit: StoredFit,
  backtest = false,
): Omit<FitRow, 'fitted_at'>[] {
  const { purchase, spend, name, customers } = fit.models;
  const base = { fit_id: fit.fitId, workspace_id: workspaceId, name, as_of: fit.asOf, backtest };
  // A fallback's reason, and the degenerate fit it replaced (with its standard errors), go with
  // its parameters: the analyst sees what was rejected and why.
  const why = (c: object) => ({
    ...('reason' in c && typeof c.reason === 'string' ? { reason: c.reason } : {}),
    ...('rejected' in c && c.rejected ? { rejected: toRejected(c.rejected as RejectedFit<object>) } : {}),
  });
  return [
    {
      ...base,
      kind: 'purchase',
      model: purchase.name,
      params: { ...purchase.params, ...why(purchase) },
      log_likelihood: purchase.logLikelihood,
      customers,
      // A purchase fit that did not converge falls back, and says so in its reason.
      converged: !('reason' in purchase && /converge/.test(purchase.reason)),
      standard_errors: purchase.standardErrors ? { ...purchase.standardErrors } : null,
    },
    {
      ...base,
      kind: 'spend',
      model: spend.name,
      params: { ...spend.params, ...why(spend) },
      log_likelihood: spend.logLikelihood,
      customers: fit.spendCustomers,
      converged: !('reason' in spend && /converge/.test(spend.reason)),
      standard_errors: spend.standardErrors ? { ...spend.standardErrors } : null,
    },
    {
      ...base,
      kind: 'rfm',
      model: RFM_MODEL,
      params: { ...fit.rfm },
      log_likelihood: null,
      customers,
      converged: true,
      standard_errors: null,
    },
  ];
}

const toRejected = (r: RejectedFit<object>) => ({
  model: r.model,
  params: r.params,
  standard_errors: r.standardErrors,
  log_likelihood: r.logLikelihood,
});

/** The stored rows back into a fit; null when the workspace was never fitted. */
export function fromFitRows(rows: readonly FitRow[]): StoredFit | null {
  const byKind = new Map(rows.map((r) => [r.kind, r]));
  const p = byKind.get('purchase');
  const s = byKind.get('spend');
  const r = byKind.get('rfm');
  if (!p || !s || !r) return null;
  const strip = (params: Record<string, unknown>) => {
    const { reason, rejected: _, ...rest } = params;
    return { params: rest, reason: typeof reason === 'string' ? reason : undefined };
  };
  const ps = strip(p.params);
  const ss = strip(s.params);
  const models = {
    name: p.name,
    customers: p.customers,
    purchase: {
      name: p.model,
      params: ps.params,
      logLikelihood: p.log_likelihood,
      standardErrors: p.standard_errors,
      reason: ps.reason,
    },
    spend: {
      name: s.model,
      params: ss.params,
      logLikelihood: s.log_likelihood,
      standardErrors: s.standard_errors,
      reason: ss.reason,
    },
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
