/**
 * The (x, t_x, T) data a purchase model is fitted on, condensed: customers with the same triple are one
 * row with a weight (Fader & Hardie fit CDNOW this way); x-only terms (the log-gamma and log-beta
 * parts of the likelihood) are computed once per distinct x, and ln(α + T), ln(α + t_x) once per
 * distinct T and t_x, per evaluation. Order dates are whole days, so there are few distinct values;
 * a likelihood evaluation then costs about one exp and one log per distinct triple, which is what lets
 * a 23,570-customer fit finish well inside the 2 s budget.
 */

export interface FrequencyRecency {
  x: number;
  tx: number;
  T: number;
}

export interface PurchaseData {
  x: Float64Array;
  tx: Float64Array;
  T: Float64Array;
  weight: Float64Array;
  /** Index of each row's x in distinctX (and T in distinctT, t_x in distinctTx). */
  xIndex: Int32Array;
  distinctX: Float64Array;
  TIndex: Int32Array;
  distinctT: Float64Array;
  txIndex: Int32Array;
  distinctTx: Float64Array;
  customers: number;
  repeatBuyers: number;
}

/** Validate and condense summaries. Throws on values no summary can have (x < 0, t_x > T, …). */
export function preparePurchaseData(rows: readonly FrequencyRecency[]): PurchaseData {
  const groups = new Map<string, { x: number; tx: number; T: number; weight: number }>();
  let repeatBuyers = 0;
  for (const r of rows) {
    assertValidTriple(r);
    if (r.x > 0) repeatBuyers++;
    const key = `${r.x}|${r.tx}|${r.T}`;
    const g = groups.get(key);
    if (g) g.weight++;
    else groups.set(key, { x: r.x, tx: r.tx, T: r.T, weight: 1 });
  }
  const list = [...groups.values()];
  const byX = indexDistinct(list.map((g) => g.x));
  const byT = indexDistinct(list.map((g) => g.T));
  const byTx = indexDistinct(list.map((g) => g.tx));
  return {
    x: Float64Array.from(list, (g) => g.x),
    tx: Float64Array.from(list, (g) => g.tx),
    T: Float64Array.from(list, (g) => g.T),
    weight: Float64Array.from(list, (g) => g.weight),
    xIndex: byX.index,
    distinctX: byX.distinct,
    TIndex: byT.index,
    distinctT: byT.distinct,
    txIndex: byTx.index,
    distinctTx: byTx.distinct,
    customers: rows.length,
    repeatBuyers,
  };
}

function indexDistinct(values: readonly number[]): { distinct: Float64Array; index: Int32Array } {
  const distinct = [...new Set(values)].sort((p, q) => p - q);
  const position = new Map(distinct.map((v, i) => [v, i]));
  return { distinct: Float64Array.from(distinct), index: Int32Array.from(values, (v) => position.get(v)!) };
}

/** ln(α + v) for each distinct v: the per-evaluation cache the likelihoods index into. */
export function logShifted(alpha: number, distinct: Float64Array): Float64Array {
  const out = new Float64Array(distinct.length);
  for (let i = 0; i < distinct.length; i++) out[i] = Math.log(alpha + distinct[i]!);
  return out;
}

export function assertValidTriple({ x, tx, T }: FrequencyRecency): void {
  const ok =
    Number.isInteger(x) &&
    x >= 0 &&
    tx >= 0 &&
    T >= 0 &&
    tx <= T &&
    (x > 0 || tx === 0) &&
    Number.isFinite(T);
  if (!ok) throw new RangeError(`invalid summary x=${x} t_x=${tx} T=${T}`);
}
