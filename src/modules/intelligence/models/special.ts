/**
 * Special functions the BG/NBD family needs, in log space where magnitudes explode.
 * Written here rather than imported: each is a few lines, and the tests pin them to known values.
 */

// Lanczos approximation, g = 7, n = 9 (the coefficient set published with Numerical Recipes-style
// implementations); relative error below 1e-15 for x > 0, which keeps LL sums of 10^5 terms exact to
// far better than the 0.1 published precision.
const LANCZOS_G = 7;
const LANCZOS = [
  0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
  12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7,
];
const HALF_LOG_TWO_PI = 0.5 * Math.log(2 * Math.PI);

/** ln Γ(x) for x > 0 (reflection for x < 0.5 keeps small shapes accurate). */
export function logGamma(x: number): number {
  if (!(x > 0)) return Number.NaN;
  if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - logGamma(1 - x);
  const y = x - 1;
  let sum = LANCZOS[0]!;
  for (let i = 1; i < LANCZOS.length; i++) sum += LANCZOS[i]! / (y + i);
  const t = y + LANCZOS_G + 0.5;
  return HALF_LOG_TWO_PI + (y + 0.5) * Math.log(t) - t + Math.log(sum);
}

/** ln B(a, b) = ln Γ(a) + ln Γ(b) − ln Γ(a + b). */
export function logBeta(a: number, b: number): number {
  return logGamma(a) + logGamma(b) - logGamma(a + b);
}

/** ln(e^u + e^v) without overflow. */
export function logAddExp(u: number, v: number): number {
  const hi = Math.max(u, v);
  if (hi === Number.NEGATIVE_INFINITY) return hi;
  return hi + Math.log1p(Math.exp(Math.min(u, v) - hi));
}

export interface Hyp2f1Options {
  /** Relative tolerance on the tail estimate. */
  tolerance?: number;
  maxTerms?: number;
}

/**
 * Gauss hypergeometric 2F1(a, b; c; z) by its power series, for −1 < z < 1.
 * Convergence is checked, not assumed: summation stops when the terms have started shrinking
 * geometrically and the bound |t|·ρ/(1 − ρ) on the remaining tail is below tolerance·|sum|.
 * A series that has not converged within maxTerms throws, so a caller never gets a silent wrong value.
 * Callers keep z away from 1 (or use Euler's transformation, see bgnbd.ts) where convergence is slow.
 */
export function hyp2f1(a: number, b: number, c: number, z: number, options: Hyp2f1Options = {}): number {
  const tolerance = options.tolerance ?? 1e-14;
  const maxTerms = options.maxTerms ?? 1_000_000;
  if (!(Math.abs(z) < 1)) throw new RangeError(`hyp2f1: |z| must be < 1, got ${z}`);
  if (c <= 0 && Number.isInteger(c))
    throw new RangeError(`hyp2f1: c must not be a non-positive integer (${c})`);
  if (z === 0) return 1;
  let term = 1;
  let sum = 1;
  for (let n = 0; n < maxTerms; n++) {
    const ratio = (((a + n) * (b + n)) / ((c + n) * (n + 1))) * z;
    term *= ratio;
    sum += term;
    if (term === 0) return sum; // a or b a non-positive integer: the series terminates
    const rho = Math.abs(ratio);
    // The ratio tends to |z| < 1. Once n exceeds |a| + |b| (+ |c| when c < 0) no factor changes sign
    // and the ratio approaches |z| (nearly) monotonically, so the tail is bounded by a geometric
    // series with ratio max(rho, |z|); the tolerance is far below any precision the models need.
    const bound = Math.max(rho, Math.abs(z));
    if (
      rho < 1 &&
      n > Math.abs(a) + Math.abs(b) + Math.max(0, -c) &&
      Math.abs(term) * (bound / (1 - bound)) <= tolerance * Math.abs(sum)
    ) {
      return sum;
    }
    if (!Number.isFinite(sum)) break;
  }
  throw new RangeError(`hyp2f1(${a}, ${b}; ${c}; ${z}) did not converge in ${maxTerms} terms`);
}

/**
 * Below this z = t/(α+T+t) both purchase models use the first-order term of their conditional
 * expectation, (r + x)·z, instead of 1 − (1−z)^(a−1)·2F1(…; z): there the difference has lost all
 * its digits to rounding, while the first-order term is off by a relative O(z) only.
 */
export const SMALL_Z = 1e-8;
