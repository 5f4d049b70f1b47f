import type { FrequencyRecency, PurchaseData } from './purchase-data';

/** Parameters of the BG/NBD family; time in weeks, as in the literature (docs/intelligence.md). */
export interface PurchaseParams {
  /** Shape of the Gamma distribution of purchase rates λ. */
  r: number;
  /** Rate (inverse scale, in weeks) of that Gamma: mean λ = r / α purchases per week. */
  alpha: number;
  /** Beta distribution of the drop-out probability p: mean p = a / (a + b). */
  a: number;
  b: number;
}

export type PurchaseModelName = 'bg_nbd' | 'mbg_nbd';

/** One model of the family as a record of pure functions (no classes: the house style of docs/architecture.md). */
export interface PurchaseModel {
  name: PurchaseModelName;
  /** Σ over customers of the log-likelihood. */
  logLikelihood(params: PurchaseParams, data: PurchaseData): number;
  /** P(customer still active at T | x, t_x, T). */
  pAlive(params: PurchaseParams, customer: FrequencyRecency): number;
  /** E[purchases in (T, T + t] | x, t_x, T], t in weeks. */
  expectedPurchases(params: PurchaseParams, t: number, customer: FrequencyRecency): number;
  /** E[purchases in (T, T + t] | alive at T, x, T]: expectedPurchases = pAlive · this. */
  expectedPurchasesIfAlive(
    params: PurchaseParams,
    t: number,
    customer: Pick<FrequencyRecency, 'x' | 'T'>,
  ): number;
  /** E[repeat purchases in (0, t]] for a customer just acquired. */
  expectedPurchasesNew(params: PurchaseParams, t: number): number;
}

/**
 * The conditional expectations have a/(a − 1)-type factors with a removable singularity at a = 1;
 * evaluating at a point 1e-7 away changes the answer by ~1e-7 relative, far below any precision
 * that matters here, and avoids a 0/0.
 */
export function avoidSingularity(v: number, at: number): number {
  return Math.abs(v - at) < 1e-7 ? at + 1e-7 : v;
}
