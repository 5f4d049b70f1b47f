/**
 * Maximum likelihood on log-parameters: every parameter of these models is positive, so optimising
 * ln θ removes the bounds and makes the surface rounder. Robustness comes from (1) several starting
 * points and (2) restarting the simplex at the best point until a restart no longer improves it — the
 * standard cure for Nelder–Mead's occasional premature collapse. Everything is bounded, so a fit
 * always ends, and it says whether it converged.
 */
import {
  type MinimizeOptions,
  type MinimizeResult,
  nelderMeadSteps,
  runToEnd,
  type Steps,
} from './nelder-mead';

export interface MaximumLikelihoodResult {
  /** exp of the optimal log-parameters. */
  params: number[];
  logLikelihood: number;
  converged: boolean;
  iterations: number;
  evaluations: number;
}

export interface FitOptions extends MinimizeOptions {
  /** Restarts of the simplex at the best point found (default 4). */
  maxRestarts?: number;
  /**
   * Purchase models: above this many distinct (x, t_x, T) rows, start from a fit on week-rounded
   * data (default WARM_START_ROWS, purchase-fit.ts; Infinity: never).
   */
  warmStartAbove?: number;
  /** Skip the standard errors (a warm start's fit is only a starting point). */
  skipStandardErrors?: boolean;
}

/** Log-parameters outside ±LOG_LIMIT mean a degenerate fit (θ < 1e-13 or > 4e8): treated as +∞. */
const LOG_LIMIT = 30;

/**
 * Maximise logLikelihood(θ) (θ > 0). The objective is the mean negative LL per customer, so tolerances
 * do not depend on how many customers there are.
 */
export function maximizeLikelihood(
  logLikelihood: (params: number[]) => number,
  customers: number,
  starts: number[][],
  options: FitOptions = {},
): MaximumLikelihoodResult {
  return runToEnd(maximizeLikelihoodSteps(logLikelihood, customers, starts, options));
}

/** maximizeLikelihood as steps (see nelder-mead.ts `Steps`). */
export function* maximizeLikelihoodSteps(
  logLikelihood: (params: number[]) => number,
  customers: number,
  starts: number[][],
  options: FitOptions = {},
): Steps<MaximumLikelihoodResult> {
  const objective = (logParams: number[]): number => {
    if (logParams.some((v) => Math.abs(v) > LOG_LIMIT)) return Number.POSITIVE_INFINITY;
    return -logLikelihood(logParams.map(Math.exp)) / customers;
  };
  const maxRestarts = options.maxRestarts ?? 4;
  // A well-posed fit of these models converges in a few hundred iterations; degenerate data (the
  // optimum at a boundary, e.g. nobody buying twice) crawls, so bound each simplex run.
  options = { maxIterations: 1500, ...options };
  let iterations = 0;
  let evaluations = 0;
  let best: { x: number[]; fx: number; converged: boolean } | null = null;
  for (const start of starts) {
    const r: MinimizeResult = yield* nelderMeadSteps(objective, start.map(Math.log), options);
    iterations += r.iterations;
    evaluations += r.evaluations;
    if (!best || r.fx < best.fx) best = r;
  }
  if (!best) throw new Error('maximizeLikelihood needs at least one starting point');
  // Converged means: a restart from the best point converged and found nothing better (within 10×
  // the value tolerance). Still improving after maxRestarts restarts is reported as not converged.
  let confirmed = false;
  for (let i = 0; i < maxRestarts && !confirmed; i++) {
    const r: MinimizeResult = yield* nelderMeadSteps(objective, best.x, { ...options, initialStep: 0.05 });
    iterations += r.iterations;
    evaluations += r.evaluations;
    confirmed = r.converged && best.fx - r.fx <= (options.fTolerance ?? 1e-10) * 10;
    if (r.fx <= best.fx) best = r;
  }
  const params = best.x.map(Math.exp);
  const logLik = -best.fx * customers;
  return {
    params,
    logLikelihood: logLik,
    converged: confirmed && Number.isFinite(logLik) && params.every(Number.isFinite),
    iterations,
    evaluations,
  };
}
