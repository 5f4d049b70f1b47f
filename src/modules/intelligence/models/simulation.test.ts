/**
 * The closed forms checked against the generative process itself, independently of any published
 * number: simulate customers, then compare the formulas' predictions, summed over customers, with what
 * the simulated customers actually did. By the tower property Σ_i E[Y_i | history_i] must match
 * Σ_i Y_i up to sampling noise, whatever the mix of histories. Tolerance: 4 standard errors (seeded, so
 * the outcome is fixed; the bound says how close the match is).
 */
import { describe, expect, it } from 'vitest';
import { simulatePurchases } from './generate';
import { selectPurchaseModel } from './purchase-fit';
import type { PurchaseParams } from './purchase-model';

const PARAMS: PurchaseParams = { r: 0.5, alpha: 6, a: 0.9, b: 1.6 };
const N = 20_000;
const CALIBRATION = 30;
const HOLDOUT = 39;

function standardError(differences: number[]): number {
  const mean = differences.reduce((s, d) => s + d, 0) / differences.length;
  const variance = differences.reduce((s, d) => s + (d - mean) ** 2, 0) / (differences.length - 1);
  return Math.sqrt(variance * differences.length);
}

describe('closed forms against simulation (20,000 customers)', () => {
  for (const name of ['bg_nbd', 'mbg_nbd'] as const) {
    const model = selectPurchaseModel(name);

    it(`${name}: Σ P(alive) matches the number of simulated customers still active`, () => {
      const customers = simulatePurchases(name, PARAMS, new Array(N).fill(CALIBRATION), 31);
      const differences = customers.map((c) => (c.alive ? 1 : 0) - model.pAlive(PARAMS, c));
      const gap = differences.reduce((s, d) => s + d, 0);
      console.log(
        `${name}: Σ(alive − P(alive)) = ${gap.toFixed(1)} (SE ${standardError(differences).toFixed(1)})`,
      );
      expect(Math.abs(gap)).toBeLessThan(4 * standardError(differences));
    });

    it(`${name}: Σ E[Y(${HOLDOUT}) | x, t_x, T] matches the simulated holdout purchases`, () => {
      const customers = simulatePurchases(name, PARAMS, new Array(N).fill(CALIBRATION + HOLDOUT), 32);
      const differences = customers.map((c) => {
        const past = c.purchaseTimes.filter((t) => t <= CALIBRATION);
        const history = { x: past.length, tx: past.length > 0 ? past[past.length - 1]! : 0, T: CALIBRATION };
        return c.purchaseTimes.length - past.length - model.expectedPurchases(PARAMS, HOLDOUT, history);
      });
      const gap = differences.reduce((s, d) => s + d, 0);
      console.log(
        `${name}: Σ(actual − expected holdout) = ${gap.toFixed(1)} (SE ${standardError(differences).toFixed(1)})`,
      );
      expect(Math.abs(gap)).toBeLessThan(4 * standardError(differences));
    });

    it(`${name}: E[X(t)] for a new customer matches the simulated mean`, () => {
      const t = 52;
      const customers = simulatePurchases(name, PARAMS, new Array(N).fill(t), 33);
      const differences = customers.map((c) => c.x - model.expectedPurchasesNew(PARAMS, t));
      expect(Math.abs(differences.reduce((s, d) => s + d, 0))).toBeLessThan(4 * standardError(differences));
    });
  }
});
