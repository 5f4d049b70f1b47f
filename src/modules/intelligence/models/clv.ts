/**
 * Discounted customer lifetime value over a horizon, the way lifetimes' `customer_lifetime_value`
 * does it but with weekly steps and an annual rate:
 *
 *   CLV = Σ_{k=1..K} v · [E(t_k) − E(t_{k−1})] / (1 + d)^(k·s / Y),   t_k = min(k·s, H) weeks,
 *
 * where E(t) is the model's conditional expected number of purchases in the next t weeks, v the
 * expected order value, d the annual discount rate, Y = 365.25 / 7 the weeks in a year
 * (WEEKS_PER_YEAR), s the step (1 week) and H the horizon (365 days = 52.14 weeks by default). Each step's purchases are discounted from the end of the step,
 * as lifetimes does — the nominal end k·s even for a last, partial step, so that a longer horizon can
 * only add value (CLV is non-decreasing in H). With d = 0 the sum telescopes to v · E(H).
 */

export interface ClvOptions {
  /** Horizon in days (default 365, docs/intelligence.md). */
  horizonDays?: number;
  /** Annual discount rate, e.g. 0.1 for 10 % a year (default 0.1). */
  annualDiscountRate?: number;
  /** Step in days (default 7). */
  stepDays?: number;
}

export const WEEKS_PER_YEAR = 365.25 / 7;
export const DEFAULT_HORIZON_DAYS = 365;
export const DEFAULT_ANNUAL_DISCOUNT_RATE = 0.1;

/**
 * @param expectedPurchases cumulative E(t) for t in weeks; must be 0 at 0 and non-decreasing.
 * @param orderValue expected value of one order (≥ 0).
 */
export function computeClv(
  expectedPurchases: (weeks: number) => number,
  orderValue: number,
  options: ClvOptions = {},
): number {
  const horizon = (options.horizonDays ?? DEFAULT_HORIZON_DAYS) / 7;
  const step = (options.stepDays ?? 7) / 7;
  const d = options.annualDiscountRate ?? DEFAULT_ANNUAL_DISCOUNT_RATE;
  if (!(horizon > 0) || !(orderValue > 0)) return 0;
  if (!(step > 0) || !(d > -1)) throw new RangeError('stepDays must be > 0 and annualDiscountRate > −1');
  let clv = 0;
  let previous = 0;
  for (let k = 1; ; k++) {
    const t = Math.min(k * step, horizon);
    const cumulative = expectedPurchases(t);
    // max(0, …) guards against a last-digit decrease of a flat E(t) making a step negative.
    clv += (orderValue * Math.max(0, cumulative - previous)) / (1 + d) ** ((k * step) / WEEKS_PER_YEAR);
    previous = Math.max(previous, cumulative);
    if (t >= horizon) break;
  }
  return clv;
}
