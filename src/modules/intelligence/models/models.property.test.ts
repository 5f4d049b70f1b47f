/**
 * Properties every fitted model must have, on random parameters and random customer histories.
 * Parameter ranges cover what fits produce on real data (weeks as the time unit), with margin.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bgNbd } from './bgnbd';
import { computeClv } from './clv';
import { expectedOrderValue, logLikelihoodGammaGamma } from './gamma-gamma';
import { mbgNbd } from './mbgnbd';
import { type FrequencyRecency, preparePurchaseData } from './purchase-data';
import type { PurchaseParams } from './purchase-model';
import { SMALL_Z } from './special';

const positive = (min: number, max: number) => fc.double({ min, max, noNaN: true, noDefaultInfinity: true });

const params: fc.Arbitrary<PurchaseParams> = fc.record({
  r: positive(0.01, 20),
  alpha: positive(0.05, 200),
  a: positive(0.05, 20),
  b: positive(0.05, 50),
});

/** A consistent history: 0 ≤ t_x ≤ T, t_x = 0 when x = 0. Heavy buyers and old customers included. */
const history: fc.Arbitrary<FrequencyRecency> = fc
  .record({ x: fc.integer({ min: 0, max: 2000 }), T: positive(0, 1000), share: positive(0, 1) })
  .map(({ x, T, share }) => ({ x, T, tx: x === 0 ? 0 : T * share }));

const models = [bgNbd, mbgNbd];

describe('BG/NBD and MBG/NBD properties', () => {
  for (const model of models) {
    it(`${model.name}: the log-likelihood is finite for any valid history`, () => {
      fc.assert(
        fc.property(params, fc.array(history, { minLength: 1, maxLength: 20 }), (p, rows) => {
          const ll = model.logLikelihood(p, preparePurchaseData(rows));
          expect(Number.isFinite(ll)).toBe(true);
        }),
      );
    });

    it(`${model.name}: P(alive) is in [0, 1]`, () => {
      fc.assert(
        fc.property(params, history, (p, h) => {
          const v = model.pAlive(p, h);
          expect(v).toBeGreaterThanOrEqual(0);
          expect(v).toBeLessThanOrEqual(1);
        }),
      );
    });

    it(`${model.name}: expected purchases are ≥ 0 and non-decreasing in t`, () => {
      fc.assert(
        fc.property(params, history, positive(0, 104), positive(0, 104), (p, h, t1, t2) => {
          const [lo, hi] = t1 <= t2 ? [t1, t2] : [t2, t1];
          const eLo = model.expectedPurchases(p, lo, h);
          const eHi = model.expectedPurchases(p, hi, h);
          expect(eLo).toBeGreaterThanOrEqual(0);
          expect(eHi).toBeGreaterThanOrEqual(eLo - 1e-9 * Math.max(1, eHi));
        }),
        { numRuns: 200 },
      );
    });

    it(`${model.name}: expected purchases over a vanishing t are never negative and join the exact formula`, () => {
      // Found by the property above in CI: 1 minus a number within rounding of 1 came out below 0.
      const p = { r: 0.01, alpha: 4.57142857142857, a: 0.05, b: 0.05 };
      expect(model.expectedPurchases(p, 1.484007384628447e-15, { x: 0, T: 0, tx: 0 })).toBeGreaterThanOrEqual(
        0,
      );
      // Either side of the switch to the first-order term, the two agree to a relative 1e-6.
      const cdnow = { r: 0.243, alpha: 4.414, a: 0.793, b: 2.426 };
      for (const h of [
        { x: 0, T: 0, tx: 0 },
        { x: 3, T: 30, tx: 20 },
      ]) {
        const t = SMALL_Z * (cdnow.alpha + h.T);
        const below = model.expectedPurchases(cdnow, t * 0.999, h) / 0.999;
        const above = model.expectedPurchases(cdnow, t * 1.001, h) / 1.001;
        expect(Math.abs(below - above) / above).toBeLessThan(1e-6);
      }
    });

    it(`${model.name}: CLV is ≥ 0 and grows with the horizon`, () => {
      fc.assert(
        fc.property(
          params,
          history,
          positive(0.01, 500),
          fc.integer({ min: 1, max: 730 }),
          fc.integer({ min: 1, max: 730 }),
          positive(0, 0.5),
          (p, h, value, d1, d2, rate) => {
            const e = (w: number) => model.expectedPurchases(p, w, h);
            const [lo, hi] = d1 <= d2 ? [d1, d2] : [d2, d1];
            const clvLo = computeClv(e, value, { horizonDays: lo, annualDiscountRate: rate });
            const clvHi = computeClv(e, value, { horizonDays: hi, annualDiscountRate: rate });
            expect(clvLo).toBeGreaterThanOrEqual(0);
            expect(clvHi).toBeGreaterThanOrEqual(clvLo * (1 - 1e-12));
          },
        ),
        { numRuns: 50 },
      );
    });
  }

  it('bg_nbd: P(alive) = 1 for a customer with no repeat purchase, however old', () => {
    fc.assert(
      fc.property(params, positive(0, 1000), (p, T) => {
        expect(bgNbd.pAlive(p, { x: 0, tx: 0, T })).toBe(1);
      }),
    );
  });

  it('mbg_nbd: P(alive) < 1 for a customer with no repeat purchase, and falls with their age', () => {
    fc.assert(
      fc.property(params, positive(0, 500), positive(0.5, 500), (p, T, more) => {
        const young = mbgNbd.pAlive(p, { x: 0, tx: 0, T });
        expect(young).toBeLessThan(1);
        expect(mbgNbd.pAlive(p, { x: 0, tx: 0, T: T + more })).toBeLessThanOrEqual(young);
      }),
    );
  });

  it('with no discounting, CLV = order value × expected purchases over the horizon', () => {
    const p = { r: 0.243, alpha: 4.414, a: 0.793, b: 2.426 };
    const h = { x: 3, tx: 20, T: 30 };
    const e = (w: number) => bgNbd.expectedPurchases(p, w, h);
    expect(computeClv(e, 25, { annualDiscountRate: 0 })).toBeCloseTo(25 * e(365 / 7), 10);
    expect(computeClv(e, 25, { annualDiscountRate: 0.1 })).toBeLessThan(25 * e(365 / 7));
  });
});

describe('Gamma-Gamma properties', () => {
  const ggParams = fc.record({ p: positive(0.05, 50), q: positive(0.05, 50), gamma: positive(0.01, 1e4) });
  const spend = fc.record({ x: fc.integer({ min: 1, max: 2000 }), zbar: positive(0.01, 1e5) });

  it('the log-likelihood is finite', () => {
    fc.assert(
      fc.property(ggParams, fc.array(spend, { minLength: 1, maxLength: 20 }), (p, rows) => {
        expect(Number.isFinite(logLikelihoodGammaGamma(p, rows))).toBe(true);
      }),
    );
  });

  it('the expected order value lies between the population mean and the customer mean (q > 1)', () => {
    fc.assert(
      fc.property(ggParams, spend, (p, s) => {
        fc.pre(p.q > 1.01);
        const population = (p.p * p.gamma) / (p.q - 1);
        const v = expectedOrderValue(p, s);
        const tolerance = 1e-9 * Math.max(population, s.zbar);
        expect(v).toBeGreaterThanOrEqual(Math.min(population, s.zbar) - tolerance);
        expect(v).toBeLessThanOrEqual(Math.max(population, s.zbar) + tolerance);
        expect(expectedOrderValue(p, { x: 0, zbar: 0 })).toBeCloseTo(population, 8);
      }),
    );
  });
});
