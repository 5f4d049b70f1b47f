/**
 * Gamma-Gamma spend model: Fader & Hardie (2013), "The Gamma-Gamma Model of Monetary Value"
 * (brucehardie.com note 025), after Colombo & Jiang (1999).
 *
 * Assumptions: a customer's order values z vary around their own mean with z ~ Gamma(p, ν); ν varies
 * across customers as Gamma(q, γ); and spend is independent of the purchase process (check: the
 * correlation of x and z̄ should be small). Only repeat purchases are used, so the first order (often
 * discounted or atypical) does not bias the mean.
 */
import { type FitOptions, maximizeLikelihoodSteps } from './fit';
import { runToEnd, type Steps } from './nelder-mead';
import { logGamma } from './special';
import { explainDegenerate, standardErrorsSteps } from './standard-errors';

export interface GammaGammaParams {
  p: number;
  q: number;
  gamma: number;
}

export interface SpendObservation {
  /** Repeat purchase days. */
  x: number;
  /** Mean value of those repeat purchase days. */
  zbar: number;
}

export interface GammaGammaFit {
  model: 'gamma_gamma';
  params: GammaGammaParams;
  logLikelihood: number;
  converged: boolean;
  /** From the Hessian of the log-likelihood at the optimum; null when it has none (flat, or no maximum). */
  standardErrors: GammaGammaParams | null;
  /** Why this converged fit must not be used (standard-errors.ts explainDegenerate), or null. */
  degenerate: string | null;
  iterations: number;
  evaluations: number;
  /** Customers the fit used: those with x > 0 and z̄ > 0. */
  customers: number;
}

/** Only these customers carry information about spend (x > 0 and a positive mean). */
export function selectSpendObservations(rows: readonly SpendObservation[]): SpendObservation[] {
  return rows.filter((r) => r.x > 0 && r.zbar > 0 && Number.isFinite(r.zbar));
}

/**
 * Spend rows ready for repeated likelihood evaluations: customers with the same (x, z̄) condensed into
 * one row with a weight (order values are often round amounts, so many repeat buyers share one),
 * ln z̄ per row, x-only terms per distinct x.
 */
export interface SpendData {
  logZbar: Float64Array;
  x: Float64Array;
  zbar: Float64Array;
  weight: Float64Array;
  xIndex: Int32Array;
  distinctX: Float64Array;
  /** Customers used (Σ weight). */
  customers: number;
  /** Their mean z̄ (a starting point of the fit). */
  meanZbar: number;
}

/** Condenses spend observations one customer at a time; only x > 0, z̄ > 0 (finite) ones are kept. */
export interface SpendAccumulator {
  add(r: SpendObservation): void;
  finish(): SpendData;
}

export function createSpendAccumulator(): SpendAccumulator {
  const groups = new Map<string, { x: number; zbar: number; weight: number }>();
  let customers = 0;
  let sum = 0;
  return {
    add(r) {
      if (!(r.x > 0 && r.zbar > 0 && Number.isFinite(r.zbar))) return;
      customers++;
      sum += r.zbar;
      const key = `${r.x}|${r.zbar}`;
      const g = groups.get(key);
      if (g) g.weight++;
      else groups.set(key, { x: r.x, zbar: r.zbar, weight: 1 });
    },
    finish() {
      const used = [...groups.values()];
      const distinct = [...new Set(used.map((r) => r.x))].sort((a, b) => a - b);
      const position = new Map(distinct.map((x, i) => [x, i]));
      return {
        logZbar: Float64Array.from(used, (r) => Math.log(r.zbar)),
        x: Float64Array.from(used, (r) => r.x),
        zbar: Float64Array.from(used, (r) => r.zbar),
        weight: Float64Array.from(used, (r) => r.weight),
        xIndex: Int32Array.from(used, (r) => position.get(r.x)!),
        distinctX: Float64Array.from(distinct),
        customers,
        meanZbar: sum / Math.max(1, customers),
      };
    },
  };
}

export function prepareSpendData(rows: readonly SpendObservation[]): SpendData {
  const acc = createSpendAccumulator();
  for (const r of rows) acc.add(r);
  return acc.finish();
}

/**
 * Σ log f(z̄ | p, q, γ; x), the density of a customer's mean repeat spend (note 025):
 *   Γ(px+q)/(Γ(px)Γ(q)) · γ^q · x^(px) · z̄^(px−1) / (γ + x z̄)^(px+q).
 * The Γ terms and x^(px) depend on x only, so they are computed once per distinct x.
 */
function logLikelihoodSpendData({ p, q, gamma }: GammaGammaParams, d: SpendData): number {
  const head = new Float64Array(d.distinctX.length);
  const constant = -logGamma(q) + q * Math.log(gamma);
  for (let i = 0; i < head.length; i++) {
    const px = p * d.distinctX[i]!;
    head[i] = logGamma(px + q) - logGamma(px) + constant + px * Math.log(d.distinctX[i]!);
  }
  let sum = 0;
  for (let j = 0; j < d.x.length; j++) {
    const x = d.x[j]!;
    const px = p * x;
    sum +=
      d.weight[j]! *
      (head[d.xIndex[j]!]! + (px - 1) * d.logZbar[j]! - (px + q) * Math.log(gamma + x * d.zbar[j]!));
  }
  return sum;
}

/** Σ log-likelihood of the rows with x > 0 (rows with x = 0 carry no spend information). */
export function logLikelihoodGammaGamma(params: GammaGammaParams, rows: readonly SpendObservation[]): number {
  return logLikelihoodSpendData(params, prepareSpendData(rows));
}

/** Maximum-likelihood fit on the customers with x > 0 and z̄ > 0. */
export function fitGammaGamma(rows: readonly SpendObservation[], options: FitOptions = {}): GammaGammaFit {
  return runToEnd(fitGammaGammaSteps(prepareSpendData(rows), options));
}

/** fitGammaGamma on condensed data, as steps (see nelder-mead.ts `Steps`). */
export function* fitGammaGammaSteps(data: SpendData, options: FitOptions = {}): Steps<GammaGammaFit> {
  const toParams = ([p, q, gamma]: number[]): GammaGammaParams => ({ p: p!, q: q!, gamma: gamma! });
  // Starts: all ones (lifetimes), and one whose population mean pγ/(q−1) equals the observed mean.
  const result = yield* maximizeLikelihoodSteps(
    (θ) => logLikelihoodSpendData(toParams(θ), data),
    Math.max(1, data.customers),
    [
      [1, 1, 1],
      [2, 3, Math.max(data.meanZbar, 1e-6)],
    ],
    options,
  );
  const converged = result.converged && data.customers > 0;
  const params = toParams(result.params);
  let standardErrors: GammaGammaParams | null = null;
  let degenerate: string | null = null;
  if (converged && !options.skipStandardErrors) {
    const se = yield* standardErrorsSteps((θ) => -logLikelihoodSpendData(toParams(θ), data), result.params);
    standardErrors = se && toParams(se);
    degenerate = explainDegenerate('gamma_gamma', { ...params }, standardErrors && { ...standardErrors });
  }
  return {
    model: 'gamma_gamma',
    params,
    logLikelihood: result.logLikelihood,
    converged,
    standardErrors,
    degenerate,
    iterations: result.iterations,
    evaluations: result.evaluations,
    customers: data.customers,
  };
}

/**
 * E[Z | p, q, γ, z̄, x] (note 025, the conditional mean): a weighted average of the population mean pγ/(q−1) and the
 * customer's own z̄, the weight on z̄ growing with x:
 *   (q−1)/(px+q−1) · pγ/(q−1) + px/(px+q−1) · z̄  =  p(γ + x z̄)/(px + q − 1).
 * For x = 0 it is the population mean, which exists only for q > 1 (NaN otherwise: the fallback
 * decides, see fallback.ts).
 */
export function expectedOrderValue({ p, q, gamma }: GammaGammaParams, { x, zbar }: SpendObservation): number {
  const denominator = p * x + q - 1;
  if (!(denominator > 0)) return Number.NaN;
  return (p * (gamma + (x > 0 ? x * zbar : 0))) / denominator;
}
