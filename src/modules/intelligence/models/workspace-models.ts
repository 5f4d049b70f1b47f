/**
 * The two calls the product's shell needs: fit a workspace's models from its customer summaries (with
 * the documented fallbacks), then score one customer with them. Pure: the shell reads orders, builds
 * summaries, stores the returned records and scores.
 */
import { classifyChurnRisk, computeChurnRiskScore, DEFAULT_CHURN_THRESHOLD, type RiskLevel } from './churn';
import { type ClvOptions, computeClv, DEFAULT_HORIZON_DAYS } from './clv';
import {
  type EmpiricalRateParams,
  expectedOrderValueMeanSpend,
  expectedPurchasesEmpirical,
  explainTooLittleData,
  FALLBACK_PURCHASE_MODEL,
  FALLBACK_SPEND_MODEL,
  fitEmpiricalRate,
  fitMeanSpend,
  type MeanSpendParams,
  MIN_REPEAT_BUYERS_FOR_FIT,
  pAliveEmpirical,
} from './fallback';
import {
  createSpendAccumulator,
  expectedOrderValue,
  fitGammaGammaSteps,
  type GammaGammaParams,
  type SpendData,
} from './gamma-gamma';
import { runToEnd, type Steps } from './nelder-mead';
import { createPurchaseAccumulator, type PurchaseData } from './purchase-data';
import { fitPurchaseModelSteps, selectPurchaseModel } from './purchase-fit';
import type { PurchaseModelName, PurchaseParams } from './purchase-model';
import type { CustomerSummary } from './summaries';

export type PurchaseModelChoice =
  | { name: PurchaseModelName; params: PurchaseParams; logLikelihood: number }
  | {
      name: typeof FALLBACK_PURCHASE_MODEL;
      params: EmpiricalRateParams;
      logLikelihood: null;
      reason: string;
    };

export type SpendModelChoice =
  | { name: 'gamma_gamma'; params: GammaGammaParams; logLikelihood: number }
  | { name: typeof FALLBACK_SPEND_MODEL; params: MeanSpendParams; logLikelihood: null; reason: string };

export interface WorkspaceModels {
  /**
   * What the product shows as model.name: the purchase model's name, with "+fallback_mean_spend"
   * appended when spend fell back. Any name containing "fallback_" is a fallback (contract §8).
   */
  name: string;
  purchase: PurchaseModelChoice;
  spend: SpendModelChoice;
  customers: number;
}

export interface FitWorkspaceOptions {
  /** Default mbg_nbd (contract §8). */
  model?: PurchaseModelName;
}

export function fitWorkspaceModels(
  summaries: readonly CustomerSummary[],
  options: FitWorkspaceOptions = {},
): WorkspaceModels {
  const acc = createWorkspaceAccumulator();
  for (const s of summaries) acc.add(s);
  return runToEnd(fitWorkspaceModelsSteps(acc.finish(), options));
}

/**
 * Everything the workspace fit needs from its customers, condensed: the purchase triples, the spend
 * observations, and the sums the fallbacks use. It grows with the distinct histories, not with the
 * customers, so the product can stream summaries through it page by page.
 */
export interface WorkspaceFitData {
  purchase: PurchaseData;
  spend: SpendData;
  empiricalRate: EmpiricalRateParams;
  meanSpend: MeanSpendParams;
  customers: number;
}

export interface WorkspaceAccumulator {
  add(summary: CustomerSummary): void;
  finish(): WorkspaceFitData;
}

export function createWorkspaceAccumulator(): WorkspaceAccumulator {
  const purchase = createPurchaseAccumulator();
  const spend = createSpendAccumulator();
  // The fallbacks' sums, as fitEmpiricalRate and fitMeanSpend compute them (fallback.ts).
  let repeatX = 0;
  let repeatTx = 0;
  let spendTotal = 0;
  let purchaseDays = 0;
  let customers = 0;
  return {
    add(c) {
      purchase.add(c);
      spend.add(c);
      customers++;
      if (c.x > 0) {
        repeatX += c.x;
        repeatTx += c.tx;
      }
      spendTotal += c.totalSpend;
      purchaseDays += c.x + 1;
    },
    finish() {
      return {
        purchase: purchase.finish(),
        spend: spend.finish(),
        empiricalRate: fitEmpiricalRate([{ x: repeatX, tx: repeatTx, T: repeatTx }]),
        meanSpend: fitMeanSpend([{ x: purchaseDays - 1, totalSpend: spendTotal }]),
        customers,
      };
    },
  };
}

/** fitWorkspaceModels on condensed data, as steps (see nelder-mead.ts `Steps`). */
export function* fitWorkspaceModelsSteps(
  data: WorkspaceFitData,
  options: FitWorkspaceOptions = {},
): Steps<WorkspaceModels> {
  const purchase = yield* choosePurchaseModel(data, options.model ?? 'mbg_nbd');
  const spend = yield* chooseSpendModel(data);
  const name = spend.name === 'gamma_gamma' ? purchase.name : `${purchase.name}+${FALLBACK_SPEND_MODEL}`;
  return { name, purchase, spend, customers: data.customers };
}

function* choosePurchaseModel(input: WorkspaceFitData, model: PurchaseModelName): Steps<PurchaseModelChoice> {
  const fallback = (reason: string): PurchaseModelChoice => ({
    name: FALLBACK_PURCHASE_MODEL,
    params: input.empiricalRate,
    logLikelihood: null,
    reason,
  });
  const data = input.purchase;
  const tooLittle = explainTooLittleData(data.customers, data.repeatBuyers);
  if (tooLittle) return fallback(tooLittle);
  const fit = yield* fitPurchaseModelSteps(model, data);
  if (!fit.converged) return fallback(`${model} fit did not converge`);
  try {
    // A fit at the edge of the parameter space can make predictions unstable: probe the horizon once.
    const probe = selectPurchaseModel(model).expectedPurchasesNew(fit.params, DEFAULT_HORIZON_DAYS / 7);
    if (!Number.isFinite(probe) || probe < 0) return fallback(`${model} predictions are not finite`);
  } catch {
    return fallback(`${model} predictions did not converge`);
  }
  return { name: model, params: fit.params, logLikelihood: fit.logLikelihood };
}

function* chooseSpendModel(input: WorkspaceFitData): Steps<SpendModelChoice> {
  const fallback = (reason: string): SpendModelChoice => ({
    name: FALLBACK_SPEND_MODEL,
    params: input.meanSpend,
    logLikelihood: null,
    reason,
  });
  const fit = yield* fitGammaGammaSteps(input.spend);
  if (fit.customers < MIN_REPEAT_BUYERS_FOR_FIT) {
    return fallback(`fewer than ${MIN_REPEAT_BUYERS_FOR_FIT} repeat buyers with spend (${fit.customers})`);
  }
  if (!fit.converged) return fallback('gamma_gamma fit did not converge');
  if (!(fit.params.q > 1)) return fallback('gamma_gamma q ≤ 1: population mean spend undefined');
  return { name: 'gamma_gamma', params: fit.params, logLikelihood: fit.logLikelihood };
}

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
