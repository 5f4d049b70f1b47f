/**
 * MBG/NBD: Batislam, Denizel & Filiztekin (2007), "Empirical validation and comparison of models for
 * customer base analysis", IJRM 24(3), 201–209, with the corrected conditional expectation of Wagner &
 * Hoppe (2008), "Erratum on the MBG/NBD model", IJRM 25(3), 225–226.
 *
 * Same as BG/NBD except that a customer may also drop out right after the first purchase (time 0):
 * a customer who never came back is no longer certainly alive, P(alive | x = 0) < 1 and falls with
 * time since that purchase. That is why the product scores with it by default.
 */
import { type FrequencyRecency, logShifted, type PurchaseData } from './purchase-data';
import { avoidSingularity, type PurchaseModel, type PurchaseParams } from './purchase-model';
import { hyp2f1, logBeta, logGamma, SMALL_Z } from './special';

/**
 * Σ log-likelihood (Batislam et al. 2007, Appendix A):
 *   L = Γ(r+x) α^r / Γ(r) · B(a, b+x+1)/B(a, b) · [(α+T)^−(r+x) + a/(b+x) · (α+t_x)^−(r+x)].
 * Unlike BG/NBD the second term is present for x = 0 too.
 */
export function logLikelihoodMbgNbd({ r, alpha, a, b }: PurchaseParams, data: PurchaseData): number {
  const k = data.distinctX.length;
  const head = new Float64Array(k);
  const logBx = new Float64Array(k);
  const base = -logGamma(r) + r * Math.log(alpha) - logBeta(a, b);
  for (let i = 0; i < k; i++) {
    const x = data.distinctX[i]!;
    head[i] = logGamma(r + x) + logBeta(a, b + x + 1) + base;
    logBx[i] = Math.log(b + x);
  }
  const logA = Math.log(a);
  const logAlphaT = logShifted(alpha, data.distinctT);
  const logAlphaTx = logShifted(alpha, data.distinctTx);
  // Per distinct x: r + x and ln a − ln(b + x); the row loop as in bgnbd.ts (logAddExp written out).
  const rx = new Float64Array(k);
  const c4 = new Float64Array(k);
  for (let i = 0; i < k; i++) {
    rx[i] = r + data.distinctX[i]!;
    c4[i] = logA - logBx[i]!;
  }
  let sum = 0;
  for (let j = 0; j < data.x.length; j++) {
    const i = data.xIndex[j]!;
    const ri = rx[i]!;
    const a3 = -ri * logAlphaT[data.TIndex[j]!]!;
    const a4 = c4[i]! - ri * logAlphaTx[data.txIndex[j]!]!;
    sum +=
      data.weight[j]! *
      (head[i]! + (a3 >= a4 ? a3 + Math.log1p(Math.exp(a4 - a3)) : a4 + Math.log1p(Math.exp(a3 - a4))));
  }
  return sum;
}

function logOddsDead({ r, alpha, a, b }: PurchaseParams, { x, tx, T }: FrequencyRecency): number {
  return Math.log(a) - Math.log(b + x) + (r + x) * (Math.log(alpha + T) - Math.log(alpha + tx));
}

/** P(alive | x, t_x, T) = 1 / (1 + a/(b+x) · ((α+T)/(α+t_x))^(r+x)) (Batislam et al. 2007, Appendix A, eq. 5). */
export function pAliveMbgNbd(params: PurchaseParams, customer: FrequencyRecency): number {
  return 1 / (1 + Math.exp(logOddsDead(params, customer)));
}

/**
 * E[Y(t) | x, t_x, T] (as corrected by Wagner & Hoppe 2008):
 *   (a+b+x)/(a−1) · [1 − ((α+T)/(α+T+t))^(r+x) · 2F1(r+x, b+x+1; a+b+x; z)] / (1 + odds),
 * with Euler's transformation as in bgnbd.ts: ((α+T)/(α+T+t))^(r+x) · 2F1(…)
 *   = (1−z)^(a−1) · 2F1(a+b−r, a−1; a+b+x; z).
 */
export function expectedPurchasesMbgNbd(
  params: PurchaseParams,
  t: number,
  customer: FrequencyRecency,
): number {
  if (!(t > 0)) return 0;
  return expectedPurchasesIfAliveMbgNbd(params, t, customer) / (1 + Math.exp(logOddsDead(params, customer)));
}

/** The factor of E[Y(t) | x, t_x, T] besides P(alive); it depends on x and T only (see bgnbd.ts). */
export function expectedPurchasesIfAliveMbgNbd(
  params: PurchaseParams,
  t: number,
  { x, T }: Pick<FrequencyRecency, 'x' | 'T'>,
): number {
  if (!(t > 0)) return 0;
  const { r, alpha, b } = params;
  const a = avoidSingularity(params.a, 1);
  const c = a + b + x;
  const z = t / (alpha + T + t);
  // Below SMALL_Z the bracket is 1 minus a number within 1e-8 of 1, and rounding leaves nothing of
  // it (at t = 1.5e-15 weeks it came out negative): its first-order term stands in, which makes the
  // whole (r + x)·z, the live customer's rate over t (relative error of order z).
  if (z < SMALL_Z) return (r + x) * z;
  const oneMinusZ = (alpha + T) / (alpha + T + t);
  const f = hyp2f1(a + b - r, a - 1, c, z);
  return (c / (a - 1)) * (1 - oneMinusZ ** (a - 1) * f);
}

/** E[X(t)] for a new customer: b/(a−1) · [1 − (α/(α+t))^r 2F1(r, b+1; a+b; t/(α+t))], the T = 0 case. */
export function expectedPurchasesNewMbgNbd(params: PurchaseParams, t: number): number {
  return expectedPurchasesMbgNbd(params, t, { x: 0, tx: 0, T: 0 });
}

export const mbgNbd: PurchaseModel = {
  name: 'mbg_nbd',
  logLikelihood: logLikelihoodMbgNbd,
  pAlive: pAliveMbgNbd,
  expectedPurchases: expectedPurchasesMbgNbd,
  expectedPurchasesIfAlive: expectedPurchasesIfAliveMbgNbd,
  expectedPurchasesNew: expectedPurchasesNewMbgNbd,
};
