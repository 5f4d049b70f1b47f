/**
 * How a back-test's predictions compare with what happened next: each customer of the calibration
 * period (orders up to as_of) has a predicted number of repeat purchase days in the holdout
 * (E[Y(t) | x, t_x, T], t the holdout's length) and an actual one. Pure; one customer at a time, so
 * a workspace of any size is evaluated page by page in constant memory.
 *
 * The table by calibration purchases is the conditional-expectation figure of Fader, Hardie & Lee
 * (2005, Figure 4): the mean actual and predicted holdout purchases of the customers with 0, 1, …, 6
 * and 7 or more repeat purchases in the calibration period.
 */
import { expectedPurchasesEmpirical, FALLBACK_PURCHASE_MODEL } from './fallback';
import type { FrequencyRecency } from './purchase-data';
import { selectPurchaseModel } from './purchase-fit';
import type { WorkspaceModels } from './workspace-models';

/** Bins 0 … CENSOR − 1, and CENSOR+ (the papers' 7+). */
export const CALIBRATION_PURCHASE_CENSOR = 7;

export interface HoldoutBin {
  /** '0', '1', …, '6', '7+'. */
  repeatPurchases: string;
  customers: number;
  /** Mean holdout purchase days of these customers, actual and predicted; null for an empty bin. */
  actualMean: number | null;
  predictedMean: number | null;
}

export interface HoldoutEvaluation {
  /** Customers of the calibration period. */
  customers: number;
  /** Their repeat purchase days in the holdout, in total. */
  actualPurchases: number;
  predictedPurchases: number;
  /** Per customer: mean |predicted − actual|, and Pearson's correlation (null without variance). */
  meanAbsoluteError: number | null;
  correlation: number | null;
  byCalibrationPurchases: HoldoutBin[];
}

export function createHoldoutEvaluation() {
  const bins = Array.from({ length: CALIBRATION_PURCHASE_CENSOR + 1 }, () => ({
    n: 0,
    actual: 0,
    predicted: 0,
  }));
  let n = 0;
  let actualSum = 0;
  let predictedSum = 0;
  let absolute = 0;
  // Welford's running means and co-moments: stable over a million customers.
  let meanP = 0;
  let meanA = 0;
  let mPP = 0;
  let mAA = 0;
  let mPA = 0;
  return {
    add(x: number, predicted: number, actual: number) {
      n++;
      actualSum += actual;
      predictedSum += predicted;
      absolute += Math.abs(predicted - actual);
      const dP = predicted - meanP;
      const dA = actual - meanA;
      meanP += dP / n;
      meanA += dA / n;
      mPP += dP * (predicted - meanP);
      mAA += dA * (actual - meanA);
      mPA += dP * (actual - meanA);
      const bin = bins[Math.min(CALIBRATION_PURCHASE_CENSOR, x)]!;
      bin.n++;
      bin.actual += actual;
      bin.predicted += predicted;
    },
    finish(): HoldoutEvaluation {
      return {
        customers: n,
        actualPurchases: actualSum,
        predictedPurchases: predictedSum,
        meanAbsoluteError: n > 0 ? absolute / n : null,
        correlation: mPP > 0 && mAA > 0 ? mPA / Math.sqrt(mPP * mAA) : null,
        byCalibrationPurchases: bins.map((b, i) => ({
          repeatPurchases: i < CALIBRATION_PURCHASE_CENSOR ? String(i) : `${i}+`,
          customers: b.n,
          actualMean: b.n > 0 ? b.actual / b.n : null,
          predictedMean: b.n > 0 ? b.predicted / b.n : null,
        })),
      };
    },
  };
}

/** Distinct (x, T) pairs the predictor remembers before it starts over (bounds its memory). */
const PREDICTOR_CACHE_LIMIT = 100_000;

/**
 * E[purchase days in the next `weeks` | x, t_x, T] under a workspace's purchase model. For BG/NBD and
 * MBG/NBD it is P(alive) times a factor of x and T alone, computed once per distinct (x, T), as the
 * workspace scorer does (customer-score.ts).
 */
export function createHoldoutPredictor(
  models: WorkspaceModels,
  weeks: number,
): (c: FrequencyRecency) => number {
  const { purchase } = models;
  if (purchase.name === FALLBACK_PURCHASE_MODEL) {
    return (c) => expectedPurchasesEmpirical(purchase.params, weeks, c);
  }
  const model = selectPurchaseModel(purchase.name);
  const cache = new Map<string, number>();
  return (c) => {
    const key = `${c.x}|${c.T}`;
    let ifAlive = cache.get(key);
    if (ifAlive === undefined) {
      if (cache.size >= PREDICTOR_CACHE_LIMIT) cache.clear();
      ifAlive = model.expectedPurchasesIfAlive(purchase.params, weeks, c);
      cache.set(key, ifAlive);
    }
    return model.pAlive(purchase.params, c) * ifAlive;
  };
}
