/**
 * Nelder–Mead simplex minimisation, with the dimension-adaptive coefficients of Gao & Han (2012,
 * "Implementing the Nelder-Mead simplex algorithm with adaptive parameters", Comput. Optim. Appl. 51)
 * which behave better than the classic (1, 2, 0.5, 0.5) beyond two dimensions. This is also what
 * scipy's `minimize(method='Nelder-Mead', adaptive=True)` does. Derivative-free, so the likelihoods
 * need no gradients; bounded by maxIterations, so a fit always ends and says whether it converged.
 */

export interface MinimizeOptions {
  /** Stop when every vertex is within xTolerance of the best (max-norm) ... */
  xTolerance?: number;
  /** ... and every vertex value is within fTolerance of the best value. */
  fTolerance?: number;
  maxIterations?: number;
  /** Initial simplex edge along each axis (the parameters here are logs, so 0.5 ≈ ×1.65). */
  initialStep?: number;
}

export interface MinimizeResult {
  x: number[];
  fx: number;
  iterations: number;
  evaluations: number;
  converged: boolean;
}

/** Minimise f from x0. Non-finite values of f are treated as +∞ (the simplex backs away from them). */
export function minimizeNelderMead(
  f: (x: number[]) => number,
  x0: number[],
  options: MinimizeOptions = {},
): MinimizeResult {
  return runToEnd(nelderMeadSteps(f, x0, options));
}

/**
 * A computation that pauses (yields) between units of work: a fit over a million customers is
 * thousands of likelihood evaluations of a few ms each, and the product runs it on the event loop
 * that also serves requests, so its shell drives it with `runCooperatively` and lets requests in
 * between. The pure API and the tests drive it to the end in one go (`runToEnd`).
 */
export type Steps<T> = Generator<void, T, void>;

export function runToEnd<T>(steps: Steps<T>): T {
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
  }
}

/** Drives the steps, calling yieldNow between them (it decides when a turn of the event loop is due). */
export async function runCooperatively<T>(steps: Steps<T>, yieldNow: () => Promise<void>): Promise<T> {
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
    await yieldNow();
  }
}

/** minimizeNelderMead as steps: one pause per simplex iteration. */
export function* nelderMeadSteps(
  f: (x: number[]) => number,
  x0: number[],
  options: MinimizeOptions = {},
): Steps<MinimizeResult> {
  const n = x0.length;
  const xTol = options.xTolerance ?? 1e-8;
  const fTol = options.fTolerance ?? 1e-10;
  const maxIterations = options.maxIterations ?? 2000 * n;
  const step = options.initialStep ?? 0.5;
  const alpha = 1;
  const gamma = 1 + 2 / n;
  const rho = 0.75 - 1 / (2 * n);
  const sigma = 1 - 1 / n;
  let evaluations = 0;
  const evaluate = (x: number[]): number => {
    evaluations++;
    const v = f(x);
    return Number.isFinite(v) ? v : Number.POSITIVE_INFINITY;
  };

  const simplex: number[][] = [x0.slice()];
  for (let i = 0; i < n; i++) {
    const v = x0.slice();
    v[i] = v[i]! + step;
    simplex.push(v);
  }
  let values = simplex.map(evaluate);
  let iterations = 0;
  let converged = false;

  while (iterations < maxIterations) {
    const order = values.map((_, i) => i).sort((i, j) => values[i]! - values[j]!);
    const sorted = order.map((i) => simplex[i]!);
    values = order.map((i) => values[i]!);
    simplex.splice(0, simplex.length, ...sorted);
    if (hasConverged(simplex, values, xTol, fTol)) {
      converged = true;
      break;
    }
    iterations++;
    yield;
    const best = values[0]!;
    const worst = values[n]!;
    const secondWorst = values[n - 1]!;
    const centroid = computeCentroid(simplex, n);
    const reflected = moveFrom(centroid, simplex[n]!, -alpha);
    const fr = evaluate(reflected);
    if (fr < best) {
      const expanded = moveFrom(centroid, simplex[n]!, -alpha * gamma);
      const fe = evaluate(expanded);
      replaceWorst(simplex, values, fe < fr ? expanded : reflected, Math.min(fe, fr));
    } else if (fr < secondWorst) {
      replaceWorst(simplex, values, reflected, fr);
    } else {
      // Outside contraction when the reflection helped a little, inside when it did not.
      const outside = fr < worst;
      const contracted = moveFrom(centroid, simplex[n]!, outside ? -alpha * rho : rho);
      const fc = evaluate(contracted);
      if (fc < (outside ? fr : worst)) {
        replaceWorst(simplex, values, contracted, fc);
      } else {
        for (let i = 1; i <= n; i++) {
          simplex[i] = moveFrom(simplex[0]!, simplex[i]!, sigma);
          values[i] = evaluate(simplex[i]!);
        }
      }
    }
  }
  let bestIndex = 0;
  for (let i = 1; i < values.length; i++) if (values[i]! < values[bestIndex]!) bestIndex = i;
  return { x: simplex[bestIndex]!, fx: values[bestIndex]!, iterations, evaluations, converged };
}

function hasConverged(simplex: number[][], values: number[], xTol: number, fTol: number): boolean {
  const best = simplex[0]!;
  for (let i = 1; i < simplex.length; i++) {
    if (!(Math.abs(values[i]! - values[0]!) <= fTol)) return false;
    for (let j = 0; j < best.length; j++) if (Math.abs(simplex[i]![j]! - best[j]!) > xTol) return false;
  }
  return true;
}

function computeCentroid(simplex: number[][], n: number): number[] {
  const c = new Array<number>(n).fill(0);
  for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) c[j] = c[j]! + simplex[i]![j]! / n;
  return c;
}

/** base + t·(point − base): t = −1 reflects point through base, t in (0, 1) shrinks toward base. */
function moveFrom(base: number[], point: number[], t: number): number[] {
  return base.map((b, j) => b + t * (point[j]! - b));
}

function replaceWorst(simplex: number[][], values: number[], x: number[], fx: number): void {
  simplex[simplex.length - 1] = x;
  values[values.length - 1] = fx;
}
