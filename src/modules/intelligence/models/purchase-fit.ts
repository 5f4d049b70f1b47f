import { bgNbd } from './bgnbd';
import { type FitOptions, maximizeLikelihood } from './fit';
import { mbgNbd } from './mbgnbd';
import type { PurchaseData } from './purchase-data';
import type { PurchaseModel, PurchaseModelName, PurchaseParams } from './purchase-model';

export interface PurchaseFit {
  model: PurchaseModelName;
  params: PurchaseParams;
  logLikelihood: number;
  converged: boolean;
  iterations: number;
  evaluations: number;
  customers: number;
  repeatBuyers: number;
}

export function selectPurchaseModel(name: PurchaseModelName): PurchaseModel {
  return name === 'bg_nbd' ? bgNbd : mbgNbd;
}

/**
 * Starting points: all ones (what lifetimes uses), and one scaled to the data — the Gamma's mean
 * r/α set to the observed repeat rate Σx/ΣT, with a moderate drop-out (a = 1, b = 3) — so that a
 * workspace whose time scale is far from 1 week still starts near the optimum.
 */
function chooseStarts(data: PurchaseData): number[][] {
  let sx = 0;
  let sT = 0;
  for (let j = 0; j < data.x.length; j++) {
    sx += data.weight[j]! * data.x[j]!;
    sT += data.weight[j]! * data.T[j]!;
  }
  const rate = sx > 0 && sT > 0 ? sx / sT : 0.1;
  return [
    [1, 1, 1, 1],
    [0.5, 0.5 / rate, 1, 3],
  ];
}

/** Fit a BG/NBD-family model by maximum likelihood. Check `converged` before using the result. */
export function fitPurchaseModel(
  name: PurchaseModelName,
  data: PurchaseData,
  options: FitOptions = {},
): PurchaseFit {
  const model = selectPurchaseModel(name);
  const toParams = ([r, alpha, a, b]: number[]): PurchaseParams => ({ r: r!, alpha: alpha!, a: a!, b: b! });
  const result = maximizeLikelihood(
    (θ) => model.logLikelihood(toParams(θ), data),
    Math.max(1, data.customers),
    chooseStarts(data),
    options,
  );
  return {
    model: name,
    params: toParams(result.params),
    logLikelihood: result.logLikelihood,
    converged: result.converged && data.customers > 0,
    iterations: result.iterations,
    evaluations: result.evaluations,
    customers: data.customers,
    repeatBuyers: data.repeatBuyers,
  };
}
