import { describe, expect, it } from 'vitest';
import { classifyChurnRisk, computeChurnRiskScore } from './churn';
import { scoreCustomer } from './customer-score';
import {
  expectedOrderValueMeanSpend,
  expectedPurchasesEmpirical,
  FALLBACK_PURCHASE_MODEL,
  FALLBACK_SPEND_MODEL,
  fitEmpiricalRate,
  fitMeanSpend,
  pAliveEmpirical,
} from './fallback';
import { simulatePurchases } from './generate';
import { createRandom } from './random';
import type { CustomerSummary } from './summaries';
import { fitWorkspaceModels } from './workspace-models';

/** Summaries with spend attached, from the generative process (≈ gamma-distributed order values). */
function simulateWorkspace(n: number, seed: number): CustomerSummary[] {
  const random = createRandom(seed);
  const ages = Array.from({ length: n }, () => 10 + 40 * random());
  return simulatePurchases('mbg_nbd', { r: 0.5, alpha: 6, a: 0.9, b: 1.6 }, ages, seed).map((c) => {
    const mean = 20 + 60 * random();
    const zbar = c.x > 0 ? mean * (0.8 + 0.4 * random()) : 0;
    return { ...c, zbar, totalSpend: mean + zbar * c.x, daysSinceLast: Math.round((c.T - c.tx) * 7) };
  });
}

describe('churn risk', () => {
  it('is 1 − P(alive), with levels low < 0.3 ≤ medium < threshold ≤ high', () => {
    expect(computeChurnRiskScore(0.25)).toBe(0.75);
    expect(computeChurnRiskScore(1.0000000001)).toBe(0);
    expect(classifyChurnRisk(0.29)).toBe('low');
    expect(classifyChurnRisk(0.3)).toBe('medium');
    expect(classifyChurnRisk(0.7)).toBe('high');
    expect(classifyChurnRisk(0.5, 0.5)).toBe('high');
    expect(classifyChurnRisk(0.25, 0.2)).toBe('high');
  });
});

describe('fallbacks', () => {
  const rows = [
    { x: 0, tx: 0, T: 10, totalSpend: 30 },
    { x: 2, tx: 8, T: 20, totalSpend: 90 },
    { x: 1, tx: 2, T: 30, totalSpend: 40 },
  ];

  it('fallback_empirical_rate: rate (x+1)/(T+G), P(alive) falls with silence, 1 right after an order', () => {
    const params = fitEmpiricalRate(rows);
    expect(params.meanGapWeeks).toBeCloseTo(10 / 3, 12);
    expect(pAliveEmpirical(params, { x: 2, tx: 20, T: 20 })).toBe(1);
    expect(pAliveEmpirical(params, { x: 2, tx: 8, T: 20 })).toBeLessThan(
      pAliveEmpirical(params, { x: 2, tx: 15, T: 20 }),
    );
    const e = expectedPurchasesEmpirical(params, 52, rows[1]!);
    expect(e).toBeCloseTo(pAliveEmpirical(params, rows[1]!) * (3 / (20 + 10 / 3)) * 52, 12);
    expect(fitEmpiricalRate([{ x: 0, tx: 0, T: 3 }]).meanGapWeeks).toBe(52);
  });

  it('fallback_mean_spend: own mean shrunk by one pseudo-order at the workspace mean', () => {
    const params = fitMeanSpend(rows);
    expect(params.meanOrderValue).toBeCloseTo(160 / 6, 12);
    expect(expectedOrderValueMeanSpend(params, rows[1]!)).toBeCloseTo((90 + 160 / 6) / 4, 12);
  });
});

describe('fitWorkspaceModels and scoreCustomer', () => {
  it('fits mbg_nbd + gamma_gamma by default when there is enough data', () => {
    const models = fitWorkspaceModels(simulateWorkspace(2000, 5));
    expect(models.name).toBe('mbg_nbd');
    expect(models.purchase.name).toBe('mbg_nbd');
    expect(models.spend.name).toBe('gamma_gamma');
    const score = scoreCustomer(models, {
      x: 3,
      tx: 20,
      T: 30,
      zbar: 40,
      totalSpend: 150,
      daysSinceLast: 70,
    });
    expect(score.pAlive).toBeGreaterThan(0);
    expect(score.pAlive).toBeLessThan(1);
    expect(score.churnRiskScore).toBeCloseTo(1 - score.pAlive, 12);
    expect(score.expectedPurchases).toBeGreaterThan(0);
    expect(score.predictedClv).toBeGreaterThan(0);
    expect(score.predictedClv).toBeLessThan(score.expectedPurchases * score.expectedOrderValue);
    expect(score.horizonDays).toBe(365);
  });

  it('falls back, and says so in the name, when there are too few customers or repeat buyers', () => {
    const small = simulateWorkspace(60, 6);
    const models = fitWorkspaceModels(small, { model: 'bg_nbd' });
    expect(models.purchase.name).toBe(FALLBACK_PURCHASE_MODEL);
    expect(models.purchase).toMatchObject({ reason: 'fewer than 100 customers (60)' });
    const oneTimers = simulateWorkspace(500, 7).map((s) => ({ ...s, x: 0, tx: 0, zbar: 0 }));
    const none = fitWorkspaceModels(oneTimers);
    expect(none.name).toBe(`${FALLBACK_PURCHASE_MODEL}+${FALLBACK_SPEND_MODEL}`);
    expect(none.purchase).toMatchObject({ reason: 'fewer than 20 repeat buyers (0)' });
    const score = scoreCustomer(none, oneTimers[0]!);
    expect(score.pAlive).toBeGreaterThan(0);
    expect(score.pAlive).toBeLessThanOrEqual(1);
    expect(score.predictedClv).toBeGreaterThanOrEqual(0);
  });
});

describe('a degenerate fit', () => {
  /** Customers who never leave (drop-out probability 1e-9): nothing in the data says when anyone leaves. */
  function neverLeaving(seed: number): CustomerSummary[] {
    const random = createRandom(seed);
    const ages = Array.from({ length: 3000 }, () => 10 + 60 * random());
    return simulatePurchases('mbg_nbd', { r: 1.5, alpha: 10, a: 1, b: 1e9 }, ages, seed).map((c) => {
      const tx = Math.round(c.tx * 7) / 7;
      const T = Math.round(c.T * 7) / 7;
      return {
        x: c.x,
        tx,
        T,
        zbar: c.x > 0 ? 30 : 0,
        totalSpend: 30 * (c.x + 1),
        daysSinceLast: Math.round((T - tx) * 7),
      };
    });
  }

  it('falls back instead of scoring every customer as certainly alive, and keeps what it rejected', () => {
    // Seeds whose fits converge (others crawl along the flat direction until the iteration bound,
    // and fall back as not converged): BG/NBD to a/(a + b) ≈ 1e-9, MBG/NBD to a ≈ 1e-12.
    for (const [model, seed] of [
      ['bg_nbd', 3],
      ['mbg_nbd', 2],
    ] as const) {
      const models = fitWorkspaceModels(neverLeaving(seed), { model });
      expect(models.purchase.name, model).toBe(FALLBACK_PURCHASE_MODEL);
      if (models.purchase.name !== FALLBACK_PURCHASE_MODEL) continue;
      expect(models.purchase.reason).toMatch(new RegExp(`^${model} fit is degenerate: `));
      expect(models.purchase.rejected).toMatchObject({ model, params: { b: expect.any(Number) } });
      // The fallback still tells a silent customer from a recent one.
      const silent = scoreCustomer(models, {
        x: 5,
        tx: 10,
        T: 60,
        zbar: 30,
        totalSpend: 180,
        daysSinceLast: 350,
      });
      expect(silent.churnRiskScore).toBeGreaterThan(0.5);
    }
  });

  it('is not what a well-posed workspace gets: its fit carries standard errors and is used', () => {
    const models = fitWorkspaceModels(simulateWorkspace(2000, 5));
    expect(models.purchase.name).toBe('mbg_nbd');
    expect(models.purchase.standardErrors).toMatchObject({
      r: expect.any(Number),
      alpha: expect.any(Number),
      a: expect.any(Number),
      b: expect.any(Number),
    });
    expect(models.spend.standardErrors).toMatchObject({ p: expect.any(Number), q: expect.any(Number) });
  });
});
