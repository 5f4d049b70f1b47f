/**
 * What the product does when a workspace has too little data for a model, or a fit fails.
 *
 * When: a purchase model (BG/NBD, MBG/NBD) is fitted only with at least MIN_CUSTOMERS_FOR_FIT customers
 * of whom at least MIN_REPEAT_BUYERS_FOR_FIT bought again (four parameters; the drop-out and rate
 * heterogeneity are not identified from one-time buyers alone), and is used only if the optimiser
 * converged to finite parameters. Gamma-Gamma needs MIN_REPEAT_BUYERS_FOR_FIT customers with a
 * positive mean repeat spend, convergence, and q > 1 (otherwise its population mean does not exist).
 *
 * Instead of a purchase model — `fallback_empirical_rate`:
 *   rate  = (x + 1) / (T + G) purchases a week, G = the workspace's mean gap between repeat purchases
 *           in weeks (Σt_x / Σx over repeat buyers; 52 when nobody bought twice). This is the posterior
 *           mean of a Poisson rate under a Gamma(1, G) prior: one pseudo-purchase per G weeks, so a
 *           brand-new customer is expected to buy at the workspace's usual pace, not infinitely fast.
 *   P(alive) = exp(−rate · (T − t_x)): the chance that a customer still buying at that rate would have
 *           gone this long without an order; 1 right after an order, falling with silence.
 *   E[purchases in t weeks] = P(alive) · rate · t.
 * Instead of Gamma-Gamma — `fallback_mean_spend`:
 *   E[order value] = (total spend + m̄) / (purchase days + 1), m̄ = the workspace's mean purchase-day
 *           value: the customer's own mean shrunk by one pseudo-order at the workspace mean.
 */
import type { FrequencyRecency } from './purchase-data';

export const FALLBACK_PURCHASE_MODEL = 'fallback_empirical_rate';
export const FALLBACK_SPEND_MODEL = 'fallback_mean_spend';
export const MIN_CUSTOMERS_FOR_FIT = 100;
export const MIN_REPEAT_BUYERS_FOR_FIT = 20;
const DEFAULT_GAP_WEEKS = 52;

export interface EmpiricalRateParams {
  meanGapWeeks: number;
}

export interface MeanSpendParams {
  meanOrderValue: number;
}

export interface SpendHistory {
  x: number;
  totalSpend: number;
}

/** Why a purchase model must not be fitted on these counts, or null when it may be. */
export function explainTooLittleData(customers: number, repeatBuyers: number): string | null {
  if (customers < MIN_CUSTOMERS_FOR_FIT)
    return `fewer than ${MIN_CUSTOMERS_FOR_FIT} customers (${customers})`;
  if (repeatBuyers < MIN_REPEAT_BUYERS_FOR_FIT) {
    return `fewer than ${MIN_REPEAT_BUYERS_FOR_FIT} repeat buyers (${repeatBuyers})`;
  }
  return null;
}

export function fitEmpiricalRate(rows: readonly FrequencyRecency[]): EmpiricalRateParams {
  let sx = 0;
  let stx = 0;
  for (const r of rows) {
    if (r.x > 0) {
      sx += r.x;
      stx += r.tx;
    }
  }
  const gap = sx > 0 ? stx / sx : DEFAULT_GAP_WEEKS;
  // A workspace whose repeat orders all fell on day 0 + a few days still needs a positive gap.
  return { meanGapWeeks: Math.max(gap, 1 / 7) };
}

export function estimateRateEmpirical(
  { meanGapWeeks }: EmpiricalRateParams,
  { x, T }: FrequencyRecency,
): number {
  return (x + 1) / (T + meanGapWeeks);
}

export function pAliveEmpirical(params: EmpiricalRateParams, customer: FrequencyRecency): number {
  return Math.exp(-estimateRateEmpirical(params, customer) * (customer.T - customer.tx));
}

export function expectedPurchasesEmpirical(
  params: EmpiricalRateParams,
  t: number,
  customer: FrequencyRecency,
): number {
  if (!(t > 0)) return 0;
  return pAliveEmpirical(params, customer) * estimateRateEmpirical(params, customer) * t;
}

export function fitMeanSpend(rows: readonly SpendHistory[]): MeanSpendParams {
  let spend = 0;
  let days = 0;
  for (const r of rows) {
    spend += r.totalSpend;
    days += r.x + 1;
  }
  return { meanOrderValue: days > 0 ? spend / days : 0 };
}

export function expectedOrderValueMeanSpend(
  { meanOrderValue }: MeanSpendParams,
  { x, totalSpend }: SpendHistory,
): number {
  return (totalSpend + meanOrderValue) / (x + 2);
}
