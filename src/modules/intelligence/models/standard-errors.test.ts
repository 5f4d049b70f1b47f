import { describe, expect, it } from 'vitest';
import { explainDegeneratePurchaseFit, MIN_MEAN_DROPOUT } from './purchase-fit';
import {
  explainDegenerate,
  hessian,
  invertPositiveDefinite,
  MAX_RELATIVE_STANDARD_ERROR,
  standardErrors,
} from './standard-errors';

describe('the numerical Hessian', () => {
  it('is exact on a quadratic, off-diagonal terms included', () => {
    const f = ([x, y]: number[]) => 3 * x! ** 2 + 2 * x! * y! + 5 * y! ** 2;
    const H = hessian(f, [1.5, 0.7]);
    expect(H[0]![0]).toBeCloseTo(6, 6);
    expect(H[0]![1]).toBeCloseTo(2, 6);
    expect(H[1]![0]).toBeCloseTo(2, 6);
    expect(H[1]![1]).toBeCloseTo(10, 6);
  });
});

describe('invertPositiveDefinite', () => {
  it('inverts a positive definite matrix, and refuses one that is not', () => {
    const inverse = invertPositiveDefinite([
      [4, 1],
      [1, 3],
    ])!;
    expect(inverse[0]![0]).toBeCloseTo(3 / 11, 12);
    expect(inverse[0]![1]).toBeCloseTo(-1 / 11, 12);
    expect(inverse[1]![1]).toBeCloseTo(4 / 11, 12);
    expect(
      invertPositiveDefinite([
        [1, 2],
        [2, 1],
      ]),
    ).toBeNull();
    expect(
      invertPositiveDefinite([
        [1, 0],
        [0, 0],
      ]),
    ).toBeNull();
  });
});

describe('standard errors', () => {
  it('of a Poisson rate: sqrt(λ̂ / n), the textbook answer', () => {
    const n = 400;
    const total = 1234;
    const negLogLik = ([λ]: number[]) => n * λ! - total * Math.log(λ!);
    const [se] = standardErrors(negLogLik, [total / n])!;
    expect(se).toBeCloseTo(Math.sqrt(total / n / n), 6);
  });

  it('are none where the likelihood is flat along a parameter', () => {
    const negLogLik = ([λ, unused]: number[]) => 400 * λ! - 1234 * Math.log(λ!) + 0 * unused!;
    expect(standardErrors(negLogLik, [1234 / 400, 5])).toBeNull();
  });
});

describe('a degenerate fit is one', () => {
  const params = { r: 0.24, alpha: 4.4, a: 0.79, b: 2.4 };
  const errors = { r: 0.013, alpha: 0.38, a: 0.19, b: 0.71 };

  it('with a parameter at the edge of the parameter space', () => {
    expect(explainDegenerate('bg_nbd', { ...params, a: 1e-9 }, errors)).toMatch(/a = 1e-9 is at the edge/);
    expect(explainDegenerate('bg_nbd', { ...params, b: 1e7 }, errors)).toMatch(/b = 10000000 is at the edge/);
  });

  it('without standard errors (flat, or no maximum)', () => {
    expect(explainDegenerate('bg_nbd', params, null)).toMatch(/not positive definite/);
  });

  it(`with a standard error above ${MAX_RELATIVE_STANDARD_ERROR} times its parameter`, () => {
    expect(explainDegenerate('bg_nbd', params, errors)).toBeNull();
    expect(explainDegenerate('bg_nbd', params, { ...errors, b: 23 })).toBeNull();
    expect(
      explainDegenerate('bg_nbd', params, { ...errors, b: 24.01 * MAX_RELATIVE_STANDARD_ERROR }),
    ).toMatch(/b = 2.4 ± 240.1 \(standard error\) is not identified/);
  });

  it(`(a purchase model) whose mean drop-out probability a/(a + b) is below ${MIN_MEAN_DROPOUT}: nobody ever leaves`, () => {
    const b = 187_224;
    expect(explainDegeneratePurchaseFit('mbg_nbd', { ...params, b }, { ...errors, b: 1000 })).toMatch(
      /mean drop-out probability a\/\(a \+ b\) = 0.00000422 .* says nobody ever leaves/,
    );
    expect(explainDegeneratePurchaseFit('mbg_nbd', params, errors)).toBeNull();
  });
});
