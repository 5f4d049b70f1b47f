/**
 * Standard errors of maximum-likelihood estimates: the square roots of the diagonal of the inverse
 * of the observed information, the Hessian of the negative log-likelihood at the optimum (what
 * lifetimes reports in its fitters' `summary`). The Hessian is taken numerically, by central
 * differences in the natural parameters with a step proportional to each parameter; the fits
 * optimise log-parameters, but at an optimum (gradient zero) the two give the same variances:
 * Var(θ) = θ² Var(ln θ).
 *
 * Pure; the Hessian is computed as steps (nelder-mead.ts `Steps`), one pause per likelihood
 * evaluation, since one evaluation over a large workspace's condensed rows takes milliseconds.
 */
import { runToEnd, type Steps } from './nelder-mead';

/** Step of the central differences, relative to each parameter. */
export const HESSIAN_RELATIVE_STEP = 1e-3;

/**
 * A second difference smaller than this share of |f| is rounding noise, not curvature: a sum of
 * float64 terms over many rows is exact to about 1e-15 of its size, and the test keeps a margin of
 * 100. Along such a parameter the likelihood is flat.
 */
export const CURVATURE_NOISE = 1e-13;

/** The Hessian of f at θ by central differences (1 + 2n + 2n(n − 1) evaluations), and f(θ), as steps. */
export function* hessianSteps(
  f: (θ: number[]) => number,
  θ: readonly number[],
): Steps<{ hessian: number[][]; value: number; flat: boolean }> {
  const n = θ.length;
  const h = θ.map((v) => HESSIAN_RELATIVE_STEP * Math.abs(v));
  const at = (moves: ReadonlyArray<[number, number]>) => {
    const point = [...θ];
    for (const [i, sign] of moves) point[i] = point[i]! + sign * h[i]!;
    return f(point);
  };
  const f0 = f([...θ]);
  const H = Array.from({ length: n }, () => new Array<number>(n).fill(0));
  let flat = false;
  for (let i = 0; i < n; i++) {
    const plus = at([[i, 1]]);
    yield;
    const minus = at([[i, -1]]);
    yield;
    const second = plus - 2 * f0 + minus;
    if (!(Math.abs(second) > CURVATURE_NOISE * Math.abs(f0))) flat = true;
    H[i]![i] = second / (h[i]! * h[i]!);
  }
  for (let i = 0; i < n; i++) {
    for (let j = i + 1; j < n; j++) {
      let sum = 0;
      for (const [si, sj, sign] of [
        [1, 1, 1],
        [1, -1, -1],
        [-1, 1, -1],
        [-1, -1, 1],
      ] as const) {
        sum +=
          sign *
          at([
            [i, si],
            [j, sj],
          ]);
        yield;
      }
      H[i]![j] = H[j]![i] = sum / (4 * h[i]! * h[j]!);
    }
  }
  return { hessian: H, value: f0, flat };
}

export function hessian(f: (θ: number[]) => number, θ: readonly number[]): number[][] {
  return runToEnd(hessianSteps(f, θ)).hessian;
}

/** The inverse of a symmetric matrix through its Cholesky factor; null unless positive definite. */
export function invertPositiveDefinite(A: readonly (readonly number[])[]): number[][] | null {
  const n = A.length;
  const L = Array.from({ length: n }, () => new Array<number>(n).fill(0));
  for (let i = 0; i < n; i++) {
    for (let j = 0; j <= i; j++) {
      let s = A[i]![j]!;
      for (let k = 0; k < j; k++) s -= L[i]![k]! * L[j]![k]!;
      if (i === j) {
        if (!(s > 0) || !Number.isFinite(s)) return null;
        L[i]![i] = Math.sqrt(s);
      } else {
        L[i]![j] = s / L[j]![j]!;
      }
    }
  }
  // A⁻¹ = L⁻ᵀ L⁻¹: invert the triangle, then multiply.
  const Li = Array.from({ length: n }, () => new Array<number>(n).fill(0));
  for (let i = 0; i < n; i++) {
    Li[i]![i] = 1 / L[i]![i]!;
    for (let j = 0; j < i; j++) {
      let s = 0;
      for (let k = j; k < i; k++) s -= L[i]![k]! * Li[k]![j]!;
      Li[i]![j] = s / L[i]![i]!;
    }
  }
  const inverse = Array.from({ length: n }, () => new Array<number>(n).fill(0));
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) {
      let s = 0;
      for (let k = Math.max(i, j); k < n; k++) s += Li[k]![i]! * Li[k]![j]!;
      inverse[i]![j] = s;
    }
  }
  return inverse.every((row) => row.every(Number.isFinite)) ? inverse : null;
}

/**
 * Standard errors of the estimates θ̂ that minimise negLogLik (the total over customers, not a
 * mean), as steps; null when the likelihood is flat along a parameter (CURVATURE_NOISE) or the
 * Hessian is not positive definite (θ̂ is no maximum), which itself marks a degenerate fit.
 */
export function* standardErrorsSteps(
  negLogLik: (θ: number[]) => number,
  θ: readonly number[],
): Steps<number[] | null> {
  if (!θ.every((v) => Number.isFinite(v) && v > 0)) return null;
  const { hessian: H, flat } = yield* hessianSteps(negLogLik, θ);
  if (flat) return null;
  const covariance = invertPositiveDefinite(H);
  if (!covariance) return null;
  return covariance.map((row, i) => Math.sqrt(row[i]!));
}

export function standardErrors(negLogLik: (θ: number[]) => number, θ: readonly number[]): number[] | null {
  return runToEnd(standardErrorsSteps(negLogLik, θ));
}

/** Beyond these, a positive parameter sits at the edge of what the optimiser explores (fit.ts). */
export const PARAMETER_RANGE = { min: 1e-6, max: 1e6 } as const;

/**
 * Above this relative standard error (SE/θ) a parameter is not identified by the data: the
 * likelihood is nearly flat along it, so the optimum's value there is arbitrary.
 */
export const MAX_RELATIVE_STANDARD_ERROR = 10;

/**
 * Why a converged fit must not be used, or null. A fit is degenerate when a parameter is at the edge
 * of the parameter space, when the log-likelihood is flat along a parameter or its Hessian is not
 * positive definite there (no standard errors), or when a parameter's standard error exceeds
 * MAX_RELATIVE_STANDARD_ERROR times its value. Fits of 100 simulated customers (the smallest a
 * workspace fits) had relative standard errors up to 2.7 on a and b; a flat direction gives far
 * more, or none at all.
 */
export function explainDegenerate(
  model: string,
  params: Readonly<Record<string, number>>,
  standardErrors: Readonly<Record<string, number>> | null,
): string | null {
  for (const [name, v] of Object.entries(params)) {
    if (!(v >= PARAMETER_RANGE.min && v <= PARAMETER_RANGE.max)) {
      return `${model} fit is degenerate: ${name} = ${formatNumber(v)} is at the edge of the parameter space`;
    }
  }
  if (!standardErrors) {
    return `${model} fit is degenerate: the log-likelihood is flat or not at a maximum (its Hessian is not positive definite)`;
  }
  for (const [name, v] of Object.entries(params)) {
    const se = standardErrors[name]!;
    if (!(se <= MAX_RELATIVE_STANDARD_ERROR * v)) {
      return `${model} fit is degenerate: ${name} = ${formatNumber(v)} ± ${formatNumber(se)} (standard error) is not identified by the data`;
    }
  }
  return null;
}

const formatNumber = (v: number) => (Number.isFinite(v) ? Number(v.toPrecision(4)).toString() : String(v));
