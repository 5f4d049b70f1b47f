/**
 * The second call the product's shell needs: score customers with a workspace's fitted models
 * (workspace-models.ts), one at a time or many with one scorer. Pure.
 */
import { classifyChurnRisk, computeChurnRiskScore, DEFAULT_CHURN_THRESHOLD, type RiskLevel } from './churn';
import { type ClvOptions, computeClv, DEFAULT_HORIZON_DAYS } from './clv';
import {
  expectedOrderValueMeanSpend,
  expectedPurchasesEmpirical,
  FALLBACK_PURCHASE_MODEL,
  pAliveEmpirical,
} from './fallback';
import { expectedOrderValue } from './gamma-gamma';
import { selectPurchaseModel } from './purchase-fit';
import type { CustomerSummary } from './summaries';
import type { WorkspaceModels } from './workspace-models';

export interface CustomerScore {
  pAlive: number;
  /** Purchases expected within the horizon. */
  expectedPurchases: number;
  expectedOrderValue: number;
  predictedClv: number;
  churnRiskScore: number;
  riskLevel: RiskLevel;
  horizonDays: number;
}

export interface ScoreOptions extends ClvOptions {
  churnThreshold?: number;
}

export function scoreCustomer(
  models: WorkspaceModels,
  customer: CustomerSummary,
  options: ScoreOptions = {},
): CustomerScore {
  const horizonDays = options.horizonDays ?? DEFAULT_HORIZON_DAYS;
  const { purchase, spend } = models;
  let pAlive: number;
  let expected: (weeks: number) => number;
  if (purchase.name === FALLBACK_PURCHASE_MODEL) {
    pAlive = pAliveEmpirical(purchase.params, customer);
    expected = (w) => expectedPurchasesEmpirical(purchase.params, w, customer);
  } else {
    const model = selectPurchaseModel(purchase.name);
    pAlive = model.pAlive(purchase.params, customer);
    expected = (w) => model.expectedPurchases(purchase.params, w, customer);
  }
  const orderValue =
    spend.name === 'gamma_gamma'
      ? expectedOrderValue(spend.params, customer)
      : expectedOrderValueMeanSpend(spend.params, customer);
  const churnRiskScore = computeChurnRiskScore(pAlive);
  return {
    pAlive,
    expectedPurchases: expected(horizonDays / 7),
    expectedOrderValue: orderValue,
    predictedClv: computeClv(expected, orderValue, { ...options, horizonDays }),
    churnRiskScore,
    riskLevel: classifyChurnRisk(churnRiskScore, options.churnThreshold ?? DEFAULT_CHURN_THRESHOLD),
    horizonDays,
  };
}

/** Distinct (x, T) pairs a scorer remembers before it starts over (bounds its memory). */
const SCORER_CACHE_LIMIT = 100_000;

/**
 * scoreCustomer for many customers of one workspace with the same options. For BG/NBD and MBG/NBD,
 * E[Y(t) | x, t_x, T] = P(alive | x, t_x, T) · E[Y(t) | alive, x, T], and the second factor does not
 * depend on t_x; so neither does the discounted weekly sum of the CLV, up to the factor
 * v · P(alive) (max(0, ·) commutes with a positive factor). Those sums cost one 2F1 series per week of
 * the horizon, ≈ 25 µs a customer; whole-day summaries give a workspace only thousands of distinct
 * (x, T), so they are computed once per pair. Results equal scoreCustomer's up to rounding (tested).
 */
export function createCustomerScorer(
  models: WorkspaceModels,
  options: ScoreOptions = {},
): (customer: CustomerSummary) => CustomerScore {
  const { purchase, spend } = models;
  if (purchase.name === FALLBACK_PURCHASE_MODEL) return (c) => scoreCustomer(models, c, options);
  const model = selectPurchaseModel(purchase.name);
  const params = purchase.params;
  const horizonDays = options.horizonDays ?? DEFAULT_HORIZON_DAYS;
  const clvOptions = { ...options, horizonDays };
  const threshold = options.churnThreshold ?? DEFAULT_CHURN_THRESHOLD;
  type Sums = { expected: number; clvPerValue: number | null };
  const cache = new Map<number, Map<number, Sums>>();
  let size = 0;
  const sumsOf = (c: CustomerSummary): Sums => {
    let byT = cache.get(c.x);
    let sums = byT?.get(c.T);
    if (sums) return sums;
    if (size >= SCORER_CACHE_LIMIT) {
      cache.clear();
      size = 0;
      byT = undefined;
    }
    if (!byT) {
      byT = new Map();
      cache.set(c.x, byT);
    }
    sums = { expected: model.expectedPurchasesIfAlive(params, horizonDays / 7, c), clvPerValue: null };
    byT.set(c.T, sums);
    size++;
    return sums;
  };
  return (c) => {
    const pAlive = model.pAlive(params, c);
    const orderValue =
      spend.name === 'gamma_gamma'
        ? expectedOrderValue(spend.params, c)
        : expectedOrderValueMeanSpend(spend.params, c);
    const sums = sumsOf(c);
    let predictedClv = 0;
    if (orderValue > 0) {
      sums.clvPerValue ??= computeClv((w) => model.expectedPurchasesIfAlive(params, w, c), 1, clvOptions);
      predictedClv = orderValue * pAlive * sums.clvPerValue;
    }
    const churnRiskScore = computeChurnRiskScore(pAlive);
    return {
      pAlive,
      expectedPurchases: pAlive * sums.expected,
      expectedOrderValue: orderValue,
      predictedClv,
      churnRiskScore,
      riskLevel: classifyChurnRisk(churnRiskScore, threshold),
      horizonDays,
    };
  };
}
