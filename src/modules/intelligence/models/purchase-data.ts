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
  const acc = createPurchaseAccumulator();
  for (const r of rows) acc.add(r);
  return acc.finish();
}

/**
 * preparePurchaseData one customer at a time: the product streams a workspace's summaries page by
 * page and keeps only the condensed triples (a few hundred thousand at most for a million customers,
 * since t_x and T are whole days), never the customers themselves.
 */
export interface PurchaseAccumulator {
  /** Adds `weight` customers with this history (validated). */
  add(r: FrequencyRecency, weight?: number): void;
  finish(): PurchaseData;
}

export function createPurchaseAccumulator(): PurchaseAccumulator {
  // The rows live in typed columns (32 bytes a row) and are found by a key. Summaries are whole
  // days (t_x, T = days / 7), so the key is numeric: per x, a small integer packing the two day
  // counts. Before, a string key ("x|t_x|T") and an object per row: at 1M synthetic customers
  // (300,869 distinct triples) much of what the fit's memory grew by, and slow to fill (with the
  // RFM columns of then, 1.3 s for 1M customers; the whole fit accumulator now 0.45 s). Anything
  // else (times that are not whole days, as in simulations) takes the string key. Rows keep the
  // order they were first seen in either way, so the condensed data, and the fit, are as before.
  const rows = createRows(4);
  const byDays = new Map<number, Map<number, number>>();
  const byString = new Map<string, number>();
  let customers = 0;
  let repeatBuyers = 0;
  const rowOf = (r: FrequencyRecency): number => {
    const txDays = wholeDays(r.tx);
    const TDays = wholeDays(r.T);
    if (txDays >= 0 && TDays >= 0 && Number.isSafeInteger(r.x)) {
      let inner = byDays.get(r.x);
      if (!inner) {
        inner = new Map();
        byDays.set(r.x, inner);
      }
      // Below 2³⁰: a small integer (no heap number per key).
      const key = txDays * DAY_KEY_SPAN + TDays;
      const row = inner.get(key);
      if (row !== undefined) return row;
      inner.set(key, rows.length);
    } else {
      const key = `${r.x}|${r.tx}|${r.T}`;
      const row = byString.get(key);
      if (row !== undefined) return row;
      byString.set(key, rows.length);
    }
    rows.push(r.x, r.tx, r.T, 0);
    return rows.length - 1;
  };
  return {
    add(r, weight = 1) {
      assertValidTriple(r);
      customers += weight;
      if (r.x > 0) repeatBuyers += weight;
      const row = rowOf(r); // before reading the columns: adding a row may replace them
      rows.columns[3]![row]! += weight;
    },
    finish() {
      const [x, tx, T, w] = rows.columns.map((c) => c.slice(0, rows.length)) as [
        Float64Array,
        Float64Array,
        Float64Array,
        Float64Array,
      ];
      return condensedData(x, tx, T, w, customers, repeatBuyers);
    },
  };
}

/** Day counts below this (89 years) make a numeric key: t_x days · span + T days < 2³⁰. */
const DAY_KEY_SPAN = 1 << 15;

/** v · 7 when v is a whole number of days (weeks as the summaries give them) below DAY_KEY_SPAN, else −1. */
function wholeDays(v: number): number {
  const days = Math.round(v * 7);
  return days / 7 === v && days >= 0 && days < DAY_KEY_SPAN ? days : -1;
}

/** `width` growable Float64Array columns of equal length. */
function createRows(width: number) {
  let capacity = 1024;
  const rows = {
    columns: Array.from({ length: width }, () => new Float64Array(capacity)),
    length: 0,
    push(...values: number[]) {
      if (rows.length === capacity) {
        capacity *= 2;
        rows.columns = rows.columns.map((c) => {
          const grown = new Float64Array(capacity);
          grown.set(c);
          return grown;
        });
      }
      for (let i = 0; i < width; i++) rows.columns[i]![rows.length] = values[i]!;
      rows.length++;
    },
  };
  return rows;
}

/**
 * The same customers with t_x and T rounded to whole weeks (rounding keeps t_x ≤ T). Far fewer
 * distinct triples: a cheap fit on it lands within a fraction of a percent of the exact optimum,
 * which is where the exact fit then starts (purchase-fit.ts).
 */
export function coarsenPurchaseData(data: PurchaseData): PurchaseData {
  const acc = createPurchaseAccumulator();
  for (let j = 0; j < data.x.length; j++) {
    const x = data.x[j]!;
    acc.add({ x, tx: x > 0 ? Math.round(data.tx[j]!) : 0, T: Math.round(data.T[j]!) }, data.weight[j]!);
  }
  return acc.finish();
}

function condensedData(
  x: Float64Array,
  tx: Float64Array,
  T: Float64Array,
  weight: Float64Array,
  customers: number,
  repeatBuyers: number,
): PurchaseData {
  const byX = indexDistinct(x);
  const byT = indexDistinct(T);
  const byTx = indexDistinct(tx);
  return {
    x,
    tx,
    T,
    weight,
    xIndex: byX.index,
    distinctX: byX.distinct,
    TIndex: byT.index,
    distinctT: byT.distinct,
    txIndex: byTx.index,
    distinctTx: byTx.distinct,
    customers,
    repeatBuyers,
  };
}

function indexDistinct(values: Float64Array): { distinct: Float64Array; index: Int32Array } {
  const distinct = Float64Array.from(new Set(values)).sort();
  const position = new Map<number, number>();
  for (let i = 0; i < distinct.length; i++) position.set(distinct[i]!, i);
  const index = new Int32Array(values.length);
  for (let i = 0; i < values.length; i++) index[i] = position.get(values[i]!)!;
  return { distinct, index };
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
