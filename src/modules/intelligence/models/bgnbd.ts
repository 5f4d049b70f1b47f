/**
 * BG/NBD: Fader, Hardie & Lee (2005), "Counting Your Customers the Easy Way: An Alternative to the
 * Pareto/NBD Model", Marketing Science 24(2), 275–284; P(alive) from Fader, Hardie & Lee (2008),
 * "Computing P(alive) Using the BG/NBD Model" (brucehardie.com note 021).
 *
 * Assumptions: while active, a customer buys as a Poisson process with rate λ ~ Gamma(r, α); after each
 * repeat purchase they drop out for good with probability p ~ Beta(a, b); λ and p are independent.
 * Consequence: a customer with no repeat purchase (x = 0) has P(alive) = 1 however long ago they bought,
 * which is why the product scores with MBG/NBD by default (docs/intelligence.md).
 */
import { type FrequencyRecency, logShifted, type PurchaseData } from './purchase-data';
import { avoidSingularity, type PurchaseModel, type PurchaseParams } from './purchase-model';
import { hyp2f1, logBeta, logGamma, SMALL_Z } from './special';

/** Σ log-likelihood, FHL (2005) eq. (6), written as lifetimes does with A1…A4 in log space. */
export function logLikelihoodBgNbd({ r, alpha, a, b }: PurchaseParams, data: PurchaseData): number {
  const k = data.distinctX.length;
  const head = new Float64Array(k); // ln Γ(r+x) − ln Γ(r) + r ln α + ln B(a, b+x) − ln B(a, b)
  const logBx1 = new Float64Array(k); // ln(b + x − 1), used only for x > 0
  const base = -logGamma(r) + r * Math.log(alpha) - logBeta(a, b);
  for (let i = 0; i < k; i++) {
    const x = data.distinctX[i]!;
    head[i] = logGamma(r + x) + logBeta(a, b + x) + base;
    logBx1[i] = x > 0 ? Math.log(b + x - 1) : 0;
  }
  const logA = Math.log(a);
  const logAlphaT = logShifted(alpha, data.distinctT);
  const logAlphaTx = logShifted(alpha, data.distinctTx);
  // Per distinct x: r + x and ln a − ln(b + x − 1). The loop below runs once per row and
  // per evaluation (hundreds of thousands × hundreds on a large workspace), so it does only the
  // row's own work: logAddExp written out (same arithmetic, no call, no max/min).
  const rx = new Float64Array(k);
  const c4 = new Float64Array(k);
  for (let i = 0; i < k; i++) {
    rx[i] = r + data.distinctX[i]!;
    c4[i] = logA - logBx1[i]!;
  }
  let sum = 0;
  for (let j = 0; j < data.x.length; j++) {
    const i = data.xIndex[j]!;
    const ri = rx[i]!;
    const a3 = -ri * logAlphaT[data.TIndex[j]!]!;
    let tail = a3;
    if (data.x[j]! > 0) {
      const a4 = c4[i]! - ri * logAlphaTx[data.txIndex[j]!]!;
      tail = a3 >= a4 ? a3 + Math.log1p(Math.exp(a4 - a3)) : a4 + Math.log1p(Math.exp(a3 - a4));
    }
    sum += data.weight[j]! * (head[i]! + tail);
  }
  return sum;
}

/** ln of the odds (dead : alive) given the history; see P(alive) below. */
function logOddsDead({ r, alpha, a, b }: PurchaseParams, { x, tx, T }: FrequencyRecency): number {
  return Math.log(a) - Math.log(b + x - 1) + (r + x) * (Math.log(alpha + T) - Math.log(alpha + tx));
}

/** P(alive | x, t_x, T) = 1 / (1 + δ(x>0) · a/(b+x−1) · ((α+T)/(α+t_x))^(r+x)) (FHL 2008, note 021). */
export function pAliveBgNbd(params: PurchaseParams, customer: FrequencyRecency): number {
  if (customer.x === 0) return 1;
  return 1 / (1 + Math.exp(logOddsDead(params, customer)));
}

/**
 * E[Y(t) | x, t_x, T], FHL (2005) eq. (10):
 *   (a+b+x−1)/(a−1) · [1 − ((α+T)/(α+T+t))^(r+x) · 2F1(r+x, b+x; a+b+x−1; z)] / (1 + δ(x>0)·odds),
 *   z = t / (α+T+t).
 * The 2F1 is rewritten with Euler's transformation 2F1(A,B;C;z) = (1−z)^(C−A−B) 2F1(C−A, C−B; C; z):
 *   ((α+T)/(α+T+t))^(r+x) · 2F1(…) = (1−z)^(a−1) · 2F1(a+b−1−r, a−1; a+b+x−1; z).
 * The transformed series has parameters that do not grow with x, so it neither overflows nor needs
 * thousands of terms for heavy buyers; the (1−z)^(r+x) factor no longer underflows either.
 */
export function expectedPurchasesBgNbd(
  params: PurchaseParams,
  t: number,
  customer: FrequencyRecency,
): number {
  if (!(t > 0)) return 0;
  const numerator = expectedPurchasesIfAliveBgNbd(params, t, customer);
  return customer.x > 0 ? numerator / (1 + Math.exp(logOddsDead(params, customer))) : numerator;
}

/**
 * The numerator of eq. (10): E[Y(t) | x, t_x, T] = P(alive) · this. It depends on x and T only (not on
 * t_x), so scoring a workspace computes it once per distinct (x, T) (workspace-models.ts).
 */
export function expectedPurchasesIfAliveBgNbd(
  params: PurchaseParams,
  t: number,
  { x, T }: Pick<FrequencyRecency, 'x' | 'T'>,
): number {
  if (!(t > 0)) return 0;
  const { r, alpha, b } = params;
  const a = avoidSingularity(params.a, 1);
  // C = a+b+x−1 is ≤ 0 only for x = 0 with a + b ≤ 1; its only pole there is C = 0 (removable here:
  // the factor C in front cancels it).
  const c = avoidSingularity(a + b + x - 1, 0);
  const z = t / (alpha + T + t);
  // Below SMALL_Z the bracket is 1 minus a number within 1e-8 of 1, and rounding leaves nothing of
  // it (at t = 1.5e-15 weeks it came out negative): its first-order term stands in, which makes the
  // whole (r + x)·z, the live customer's rate over t (relative error of order z).
  if (z < SMALL_Z) return (r + x) * z;
  const oneMinusZ = (alpha + T) / (alpha + T + t);
  const f = hyp2f1(a + b - 1 - r, a - 1, c, z);
  return (c / (a - 1)) * (1 - oneMinusZ ** (a - 1) * f);
}

/** E[X(t)] for a newly acquired customer, FHL (2005) eq. (9): the x = 0, T = 0 case of eq. (10). */
export function expectedPurchasesNewBgNbd(params: PurchaseParams, t: number): number {
  return expectedPurchasesBgNbd(params, t, { x: 0, tx: 0, T: 0 });
}

export const bgNbd: PurchaseModel = {
  name: 'bg_nbd',
  logLikelihood: logLikelihoodBgNbd,
  pAlive: pAliveBgNbd,
  expectedPurchases: expectedPurchasesBgNbd,
  expectedPurchasesIfAlive: expectedPurchasesIfAliveBgNbd,
  expectedPurchasesNew: expectedPurchasesNewBgNbd,
};
