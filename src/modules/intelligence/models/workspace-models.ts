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
import { expectedOrderValue, fitGammaGamma, type GammaGammaParams } from './gamma-gamma';
import { preparePurchaseData } from './purchase-data';
import { fitPurchaseModel, selectPurchaseModel } from './purchase-fit';
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
  const purchase = choosePurchaseModel(summaries, options.model ?? 'mbg_nbd');
  const spend = chooseSpendModel(summaries);
  const name = spend.name === 'gamma_gamma' ? purchase.name : `${purchase.name}+${FALLBACK_SPEND_MODEL}`;
  return { name, purchase, spend, customers: summaries.length };
}

function choosePurchaseModel(
  summaries: readonly CustomerSummary[],
  model: PurchaseModelName,
): PurchaseModelChoice {
  const fallback = (reason: string): PurchaseModelChoice => ({
    name: FALLBACK_PURCHASE_MODEL,
    params: fitEmpiricalRate(summaries),
    logLikelihood: null,
    reason,
  });
  const data = preparePurchaseData(summaries);
  const tooLittle = explainTooLittleData(data.customers, data.repeatBuyers);
  if (tooLittle) return fallback(tooLittle);
  const fit = fitPurchaseModel(model, data);
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

function chooseSpendModel(summaries: readonly CustomerSummary[]): SpendModelChoice {
  const fallback = (reason: string): SpendModelChoice => ({
    name: FALLBACK_SPEND_MODEL,
    params: fitMeanSpend(summaries),
    logLikelihood: null,
    reason,
  });
  const fit = fitGammaGamma(summaries);
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
