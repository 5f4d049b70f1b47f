import { DEFAULT_HORIZON_DAYS } from './clv';
import {
  type EmpiricalRateParams,
  explainTooLittleData,
  FALLBACK_PURCHASE_MODEL,
  FALLBACK_SPEND_MODEL,
  fitEmpiricalRate,
  fitMeanSpend,
  type MeanSpendParams,
  MIN_REPEAT_BUYERS_FOR_FIT,
} from './fallback';
import {
  createSpendAccumulator,
  fitGammaGammaSteps,
  type GammaGammaParams,
  type SpendData,
} from './gamma-gamma';
import { runToEnd, type Steps } from './nelder-mead';
import { createPurchaseAccumulator, type PurchaseData } from './purchase-data';
import { fitPurchaseModelSteps, selectPurchaseModel } from './purchase-fit';
import type { PurchaseModelName, PurchaseParams } from './purchase-model';
import type { CustomerSummary } from './summaries';

/** A fit that converged but was not used (degenerate): what it was, for the analyst. */
export interface RejectedFit<P> {
  model: string;
  params: P;
  standardErrors: P | null;
  logLikelihood: number;
}

export type PurchaseModelChoice =
  | {
      name: PurchaseModelName;
      params: PurchaseParams;
      logLikelihood: number;
      standardErrors: PurchaseParams;
    }
  | {
      name: typeof FALLBACK_PURCHASE_MODEL;
      params: EmpiricalRateParams;
      logLikelihood: null;
      standardErrors: null;
      reason: string;
      rejected?: RejectedFit<PurchaseParams>;
    };

export type SpendModelChoice =
  | { name: 'gamma_gamma'; params: GammaGammaParams; logLikelihood: number; standardErrors: GammaGammaParams }
  | {
      name: typeof FALLBACK_SPEND_MODEL;
      params: MeanSpendParams;
      logLikelihood: null;
      standardErrors: null;
      reason: string;
      rejected?: RejectedFit<GammaGammaParams>;
    };

export interface WorkspaceModels {
  /**
   * What the product shows as model.name: the purchase model's name, with "+fallback_mean_spend"
   * appended when spend fell back. Any name containing "fallback_" is a fallback (docs/intelligence.md).
   */
  name: string;
  purchase: PurchaseModelChoice;
  spend: SpendModelChoice;
  customers: number;
}

export interface FitWorkspaceOptions {
  /** Default mbg_nbd (docs/intelligence.md). */
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
  const fallback = (reason: string, rejected?: RejectedFit<PurchaseParams>): PurchaseModelChoice => ({
    name: FALLBACK_PURCHASE_MODEL,
    params: input.empiricalRate,
    logLikelihood: null,
    standardErrors: null,
    reason,
    ...(rejected && { rejected }),
  });
  const data = input.purchase;
  const tooLittle = explainTooLittleData(data.customers, data.repeatBuyers);
  if (tooLittle) return fallback(tooLittle);
  const fit = yield* fitPurchaseModelSteps(model, data);
  if (!fit.converged) return fallback(`${model} fit did not converge`);
  const rejected = {
    model,
    params: fit.params,
    standardErrors: fit.standardErrors,
    logLikelihood: fit.logLikelihood,
  };
  if (fit.degenerate || !fit.standardErrors)
    return fallback(fit.degenerate ?? `${model} fit is degenerate`, rejected);
  try {
    // A fit at the edge of the parameter space can make predictions unstable: probe the horizon once.
    const probe = selectPurchaseModel(model).expectedPurchasesNew(fit.params, DEFAULT_HORIZON_DAYS / 7);
    if (!Number.isFinite(probe) || probe < 0)
      return fallback(`${model} predictions are not finite`, rejected);
  } catch {
    return fallback(`${model} predictions did not converge`, rejected);
  }
  return {
    name: model,
    params: fit.params,
    logLikelihood: fit.logLikelihood,
    standardErrors: fit.standardErrors,
  };
}

function* chooseSpendModel(input: WorkspaceFitData): Steps<SpendModelChoice> {
  const fallback = (reason: string, rejected?: RejectedFit<GammaGammaParams>): SpendModelChoice => ({
    name: FALLBACK_SPEND_MODEL,
    params: input.meanSpend,
    logLikelihood: null,
    standardErrors: null,
    reason,
    ...(rejected && { rejected }),
  });
  const fit = yield* fitGammaGammaSteps(input.spend);
  if (fit.customers < MIN_REPEAT_BUYERS_FOR_FIT) {
    return fallback(`fewer than ${MIN_REPEAT_BUYERS_FOR_FIT} repeat buyers with spend (${fit.customers})`);
  }
  if (!fit.converged) return fallback('gamma_gamma fit did not converge');
  const rejected = {
    model: 'gamma_gamma',
    params: fit.params,
    standardErrors: fit.standardErrors,
    logLikelihood: fit.logLikelihood,
  };
  if (!(fit.params.q > 1)) return fallback('gamma_gamma q ≤ 1: population mean spend undefined', rejected);
  if (fit.degenerate || !fit.standardErrors) {
    return fallback(fit.degenerate ?? 'gamma_gamma fit is degenerate', rejected);
  }
  return {
    name: 'gamma_gamma',
    params: fit.params,
    logLikelihood: fit.logLikelihood,
    standardErrors: fit.standardErrors,
  };
}
