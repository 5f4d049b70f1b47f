/**
 * RFM: 1–5 quintile scores within a workspace, and the named segment of docs/intelligence.md.
 *
 * Scores. For n customers, a customer's score on one dimension is
 *     min(5, 1 + floor(5 · w / (n − 1)))   (1 when n = 1),
 * where w is the number of customers strictly worse on that dimension and worse means: longer since
 * the last order (R), fewer purchase days (F), less spend (M). w / (n − 1) is SQL's percent_rank();
 * the product's SQL should use the exact integer form, least(5, 1 + (5 * (rank() over (order by v)
 * − 1)) / (count(*) over () − 1)) with integer division, because 5 · percent_rank() in floating point
 * can land a hair below an integer. With distinct values these are quintiles up to rounding, and the single
 * best customer always scores 5 (even in a workspace of two). Ties get the same score, the lowest
 * their group would span (rank()'s convention). Consequences: the result does not depend on input order; a value shared by many
 * customers (one-time buyers' F) scores 1 for all of them; if every customer has the same value,
 * everyone scores 1 on that dimension.
 *
 * Segment. From R and FM = floor((F + M) / 2) (a half rounds down, so FM = 5 needs both F and M = 5)
 * through the table below (rows R, columns FM); every one of the 125 (R, F, M) triples has exactly one
 * label. Customers with no orders are not scored and have no label (null).
 */
import type { CustomerSummary } from './summaries';

export type RfmScore = 1 | 2 | 3 | 4 | 5;

export type RfmSegment =
  | 'champions'
  | 'loyal'
  | 'potential_loyalist'
  | 'new_customer'
  | 'promising'
  | 'need_attention'
  | 'about_to_sleep'
  | 'at_risk'
  | 'cannot_lose'
  | 'hibernating'
  | 'lost';

export const RFM_SEGMENTS: readonly RfmSegment[] = [
  'champions',
  'loyal',
  'potential_loyalist',
  'new_customer',
  'promising',
  'need_attention',
  'about_to_sleep',
  'at_risk',
  'cannot_lose',
  'hibernating',
  'lost',
];

/** SEGMENT_TABLE[R − 1][FM − 1]. Keep in step with docs/intelligence.md. */
export const RFM_SEGMENT_TABLE: readonly (readonly RfmSegment[])[] = [
  /* R=1 */ ['lost', 'lost', 'at_risk', 'at_risk', 'cannot_lose'],
  /* R=2 */ ['hibernating', 'hibernating', 'at_risk', 'at_risk', 'cannot_lose'],
  /* R=3 */ ['about_to_sleep', 'about_to_sleep', 'need_attention', 'loyal', 'loyal'],
  /* R=4 */ ['promising', 'potential_loyalist', 'potential_loyalist', 'loyal', 'loyal'],
  /* R=5 */ ['new_customer', 'potential_loyalist', 'potential_loyalist', 'champions', 'champions'],
];

export interface RfmInput {
  /** Whole days since the last order at the scoring date. */
  recencyDays: number;
  /** Number of orders (the product counts purchase days). */
  frequency: number;
  /** Total spend. */
  monetary: number;
}

export interface RfmScores {
  r: RfmScore;
  f: RfmScore;
  m: RfmScore;
}

/** Scores for values where larger is better (pass negated values when smaller is better). */
export function scoreQuintiles(values: readonly number[]): RfmScore[] {
  const n = values.length;
  const sorted = Float64Array.from(values).sort();
  return values.map((v) => {
    if (Number.isNaN(v)) throw new RangeError('RFM input must not be NaN');
    if (n === 1) return 1;
    const worse = countBelow(sorted, v);
    return Math.min(5, 1 + Math.floor((5 * worse) / (n - 1))) as RfmScore;
  });
}

/** Number of entries of the ascending array strictly less than v (binary search). */
function countBelow(sorted: Float64Array, v: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** R, F, M scores of every customer of one workspace (same order as the input). */
export function scoreRfm(customers: readonly RfmInput[]): RfmScores[] {
  const r = scoreQuintiles(customers.map((c) => -c.recencyDays));
  const f = scoreQuintiles(customers.map((c) => c.frequency));
  const m = scoreQuintiles(customers.map((c) => c.monetary));
  return customers.map((_, i) => ({ r: r[i]!, f: f[i]!, m: m[i]! }));
}

export function combineFrequencyMonetary(f: RfmScore, m: RfmScore): RfmScore {
  return Math.floor((f + m) / 2) as RfmScore;
}

/** The named segment of a score triple (docs/intelligence.md). */
export function labelRfmSegment({ r, f, m }: RfmScores): RfmSegment {
  const row = RFM_SEGMENT_TABLE[r - 1];
  const label = row?.[combineFrequencyMonetary(f, m) - 1];
  if (!label) throw new RangeError(`RFM scores must be 1–5, got R=${r} F=${f} M=${m}`);
  return label;
}

/** The RFM inputs of a customer summary: days since the last purchase day, purchase days, total spend. */
export function toRfmInput(summary: CustomerSummary): RfmInput {
  return { recencyDays: summary.daysSinceLast, frequency: summary.x + 1, monetary: summary.totalSpend };
}

/** Scores and segment of every customer of one workspace, in input order. */
export function segmentCustomers(
  summaries: readonly CustomerSummary[],
): Array<{ scores: RfmScores; segment: RfmSegment }> {
  return scoreRfm(summaries.map(toRfmInput)).map((scores) => ({ scores, segment: labelRfmSegment(scores) }));
}
