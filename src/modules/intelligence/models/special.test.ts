import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hyp2f1, logAddExp, logBeta, logGamma } from './special';

describe('logGamma', () => {
  it('matches factorials and Γ(1/2) = √π', () => {
    let factorial = 1;
    for (let n = 1; n <= 30; n++) {
      expect(logGamma(n)).toBeCloseTo(Math.log(factorial), 10);
      factorial *= n;
    }
    expect(logGamma(0.5)).toBeCloseTo(0.5 * Math.log(Math.PI), 13);
    expect(logGamma(1e-8)).toBeCloseTo(-Math.log(1e-8) - 0.5772156649e-8, 8);
  });

  it('obeys ln Γ(x+1) = ln Γ(x) + ln x, from tiny to huge x', () => {
    fc.assert(
      fc.property(fc.double({ min: 1e-6, max: 1e7, noNaN: true }), (x) => {
        const lhs = logGamma(x + 1);
        const rhs = logGamma(x) + Math.log(x);
        expect(Math.abs(lhs - rhs)).toBeLessThanOrEqual(1e-12 * Math.max(1, Math.abs(lhs)));
      }),
    );
  });

  it('is NaN outside its domain', () => {
    expect(logGamma(0)).toBeNaN();
    expect(logGamma(-1.5)).toBeNaN();
  });
});

describe('logBeta and logAddExp', () => {
  it('B(1, b) = 1/b and B(a, b) is symmetric', () => {
    expect(logBeta(1, 7.5)).toBeCloseTo(-Math.log(7.5), 13);
    expect(logBeta(2.3, 0.4)).toBeCloseTo(logBeta(0.4, 2.3), 14);
  });

  it('adds in log space without overflow', () => {
    expect(logAddExp(1000, 1000)).toBeCloseTo(1000 + Math.LN2, 12);
    expect(logAddExp(-Infinity, 3)).toBe(3);
    expect(logAddExp(Math.log(2), Math.log(3))).toBeCloseTo(Math.log(5), 14);
  });
});

describe('hyp2f1', () => {
  it('matches closed forms', () => {
    for (const z of [-0.9, -0.3, 0.1, 0.5, 0.9, 0.99]) {
      expect(hyp2f1(1, 1, 2, z)).toBeCloseTo(-Math.log(1 - z) / z, 11);
      expect(hyp2f1(2.5, 0.7, 0.7, z) / (1 - z) ** -2.5).toBeCloseTo(1, 12);
    }
    for (const s of [0.1, 0.5, 0.9]) expect(hyp2f1(0.5, 0.5, 1.5, s * s)).toBeCloseTo(Math.asin(s) / s, 12);
    expect(hyp2f1(-3, 2, 1.5, 0.4)).toBeCloseTo(
      1 -
        (3 * 2 * 0.4) / 1.5 +
        (3 * 2 * 2 * 3 * 0.16) / (1.5 * 2.5 * 2) -
        (3 * 2 * 1 * 2 * 3 * 4 * 0.064) / (1.5 * 2.5 * 3.5 * 6),
      13,
    );
    expect(hyp2f1(3, 4, 5, 0)).toBe(1);
  });

  it("agrees with Euler's transformation (1−z)^(c−a−b) 2F1(c−a, c−b; c; z)", () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0.05, max: 5, noNaN: true }),
        fc.double({ min: -0.9, max: 5, noNaN: true }),
        fc.double({ min: 0.1, max: 30, noNaN: true }),
        fc.double({ min: 0, max: 0.9, noNaN: true }),
        (a, b, c, z) => {
          const direct = hyp2f1(a, b, c, z);
          const euler = (1 - z) ** (c - a - b) * hyp2f1(c - a, c - b, c, z);
          // The transformed side can sum large alternating terms (e.g. b = 0, c small), so compare at a
          // precision both sides can deliver, not at machine precision.
          expect(Math.abs(direct - euler)).toBeLessThanOrEqual(1e-6 * Math.max(1, Math.abs(direct)));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('refuses |z| ≥ 1, poles of c, and a series that has not converged', () => {
    expect(() => hyp2f1(1, 1, 2, 1)).toThrow(RangeError);
    expect(() => hyp2f1(1, 1, -2, 0.5)).toThrow(RangeError);
    expect(() => hyp2f1(1, 1, 2, 0.999999, { maxTerms: 1000 })).toThrow(/did not converge/);
  });
});
