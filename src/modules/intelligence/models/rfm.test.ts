import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  labelRfmSegment,
  RFM_SEGMENT_TABLE,
  RFM_SEGMENTS,
  type RfmScore,
  type RfmScores,
  scoreQuintiles,
  scoreRfm,
  segmentCustomers,
} from './rfm';

const SCORES: RfmScore[] = [1, 2, 3, 4, 5];

describe('RFM segment labels', () => {
  it('give exactly one known label to each of the 125 (R, F, M) triples, and use all 11 labels', () => {
    const seen = new Set<string>();
    for (const r of SCORES) {
      for (const f of SCORES) {
        for (const m of SCORES) {
          const label = labelRfmSegment({ r, f, m });
          expect(RFM_SEGMENTS).toContain(label);
          seen.add(label);
        }
      }
    }
    expect([...seen].sort()).toEqual([...RFM_SEGMENTS].sort());
    expect(RFM_SEGMENT_TABLE.flat()).toHaveLength(25);
  });

  it('reads the table by R and FM = floor((F + M) / 2)', () => {
    expect(labelRfmSegment({ r: 5, f: 5, m: 5 })).toBe('champions');
    expect(labelRfmSegment({ r: 5, f: 1, m: 2 })).toBe('new_customer');
    expect(labelRfmSegment({ r: 5, f: 2, m: 2 })).toBe('potential_loyalist');
    expect(labelRfmSegment({ r: 4, f: 1, m: 1 })).toBe('promising');
    expect(labelRfmSegment({ r: 3, f: 5, m: 4 })).toBe('loyal');
    expect(labelRfmSegment({ r: 3, f: 3, m: 3 })).toBe('need_attention');
    expect(labelRfmSegment({ r: 3, f: 1, m: 3 })).toBe('about_to_sleep');
    expect(labelRfmSegment({ r: 2, f: 4, m: 3 })).toBe('at_risk');
    expect(labelRfmSegment({ r: 1, f: 5, m: 5 })).toBe('cannot_lose');
    expect(labelRfmSegment({ r: 1, f: 5, m: 4 })).toBe('at_risk');
    expect(labelRfmSegment({ r: 2, f: 1, m: 1 })).toBe('hibernating');
    expect(labelRfmSegment({ r: 1, f: 2, m: 3 })).toBe('lost');
  });

  it('refuses scores outside 1–5', () => {
    expect(() => labelRfmSegment({ r: 0, f: 1, m: 1 } as unknown as RfmScores)).toThrow(RangeError);
  });
});

describe('RFM quintile scores', () => {
  it('are exact quintiles for distinct values', () => {
    expect(scoreQuintiles([10, 20, 30, 40, 50, 60, 70, 80, 90, 100])).toEqual([1, 1, 2, 2, 3, 3, 4, 4, 5, 5]);
  });

  it('give tied values the same, lowest score of their group', () => {
    // 6 of 10 customers bought once: all score 1; the rest spread above.
    expect(scoreQuintiles([1, 1, 1, 1, 1, 1, 2, 2, 3, 7])).toEqual([1, 1, 1, 1, 1, 1, 4, 4, 5, 5]);
    expect(scoreQuintiles([4, 4, 4])).toEqual([1, 1, 1]);
    expect(scoreQuintiles([9])).toEqual([1]);
    expect(scoreQuintiles([2, 9])).toEqual([1, 5]);
    expect(scoreQuintiles([2, 9, 5])).toEqual([1, 5, 3]);
  });

  it('score recency inversely: the most recent buyers get R = 5', () => {
    const s = scoreRfm([
      { recencyDays: 1, frequency: 9, monetary: 900 },
      { recencyDays: 400, frequency: 1, monetary: 10 },
      { recencyDays: 30, frequency: 3, monetary: 200 },
      { recencyDays: 90, frequency: 2, monetary: 50 },
      { recencyDays: 200, frequency: 1, monetary: 30 },
    ]);
    expect(s.map((x) => x.r)).toEqual([5, 1, 4, 3, 2]);
    expect(s.map((x) => x.f)).toEqual([5, 1, 4, 3, 1]);
    expect(s.map((x) => x.m)).toEqual([5, 1, 4, 3, 2]);
    expect(labelRfmSegment(s[0]!)).toBe('champions');
    expect(labelRfmSegment(s[1]!)).toBe('lost');
  });

  it('are computed from customer summaries: recency in days, purchase days, total spend', () => {
    const base = { tx: 0, T: 10, zbar: 0 };
    const result = segmentCustomers([
      { ...base, x: 0, totalSpend: 10, daysSinceLast: 70 },
      { ...base, x: 4, totalSpend: 500, daysSinceLast: 1 },
    ]);
    expect(result.map((r) => r.segment)).toEqual(['lost', 'champions']);
  });

  it('are in 1–5, independent of input order, and monotone in the value', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 50 }), { minLength: 1, maxLength: 200 }),
        fc.integer(),
        (values, seed) => {
          const scores = scoreQuintiles(values);
          const shuffled = values
            .map((v, i) => ({ v, i, k: (i * 2654435761 + seed) >>> 0 }))
            .sort((p, q) => p.k - q.k);
          const reScored = scoreQuintiles(shuffled.map((s) => s.v));
          shuffled.forEach((s, j) => {
            expect(reScored[j]).toBe(scores[s.i]);
          });
          values.forEach((v, i) => {
            expect(scores[i]).toBeGreaterThanOrEqual(1);
            expect(scores[i]).toBeLessThanOrEqual(5);
            values.forEach((w, j) => {
              if (v < w) expect(scores[i]).toBeLessThanOrEqual(scores[j]!);
            });
          });
        },
      ),
      { numRuns: 100 },
    );
  });
});
