/**
 * Parameter recovery: data drawn from each model's own generative process with known parameters must
 * be fitted back to them. Two checks: the estimates are near the truth, and the truth is inside the
 * 99 % likelihood-ratio confidence region, 2·(LL(θ̂) − LL(θ)) < χ²₄(0.99) = 13.28 — the statistically
 * honest form of "near", since a and b are much less precisely identified than r and α.
 */
import { describe, expect, it } from 'vitest';
import { simulatePurchases } from './generate';
import { preparePurchaseData } from './purchase-data';
import { fitPurchaseModel, selectPurchaseModel } from './purchase-fit';
import type { PurchaseParams } from './purchase-model';
import { createRandom } from './random';

const CHI2_4_99 = 13.28;
const TRUTH: PurchaseParams = { r: 0.3, alpha: 5, a: 0.8, b: 2.5 };

function drawAges(n: number, seed: number): number[] {
  const random = createRandom(seed);
  // Customers acquired over a year, observed up to 78 weeks after the first acquisition.
  return Array.from({ length: n }, () => 26 + 52 * random());
}

describe('parameter recovery (5,000 simulated customers)', () => {
  for (const name of ['bg_nbd', 'mbg_nbd'] as const) {
    it(`${name} recovers r, α, a, b from its own generative process`, () => {
      const customers = simulatePurchases(name, TRUTH, drawAges(5000, 11), 2024);
      const data = preparePurchaseData(customers);
      const fit = fitPurchaseModel(name, data);
      const llTruth = selectPurchaseModel(name).logLikelihood(TRUTH, data);
      console.log(`${name} recovery: truth ${JSON.stringify(TRUTH)} fit ${JSON.stringify(fit.params)}`);
      expect(fit.converged).toBe(true);
      expect(fit.logLikelihood).toBeGreaterThanOrEqual(llTruth);
      expect(2 * (fit.logLikelihood - llTruth)).toBeLessThan(CHI2_4_99);
      expect(Math.abs(fit.params.r / TRUTH.r - 1)).toBeLessThan(0.15);
      expect(Math.abs(fit.params.alpha / TRUTH.alpha - 1)).toBeLessThan(0.2);
      expect(Math.abs(fit.params.a / TRUTH.a - 1)).toBeLessThan(0.4);
      expect(Math.abs(fit.params.b / TRUTH.b - 1)).toBeLessThan(0.4);
    });
  }

  it('simulates what the models assume: a mean purchase rate r/α, P(alive) 1 for BG/NBD one-timers', () => {
    const customers = simulatePurchases('bg_nbd', TRUTH, new Array(5000).fill(52), 7);
    const meanLambda = customers.reduce((s, c) => s + c.lambda, 0) / customers.length;
    expect(meanLambda).toBeCloseTo(TRUTH.r / TRUTH.alpha, 2);
    expect(customers.filter((c) => c.x === 0).every((c) => c.alive)).toBe(true);
    for (const c of customers) {
      expect(c.tx).toBeLessThanOrEqual(c.T);
      expect(c.purchaseTimes).toHaveLength(c.x);
    }
  });

  it('is reproducible from its seed', () => {
    const a = simulatePurchases('mbg_nbd', TRUTH, [10, 20, 30], 99);
    const b = simulatePurchases('mbg_nbd', TRUTH, [10, 20, 30], 99);
    expect(a).toEqual(b);
  });
});
