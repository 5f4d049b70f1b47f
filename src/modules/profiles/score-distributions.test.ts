import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { mergeScoreDistributions } from './score-distributions';
import type { ScoreDistributionRows } from './scores.repo';

/** One scored profile, as the distributions see it. */
interface Scored {
  r: number;
  f: number;
  segment: string;
  churn: number;
  clv: number | null;
}

/** What the one-pass read answers for these profiles (grid, labels, buckets, CLV figures). */
function distributionsOf(ps: readonly Scored[]): { rows: ScoreDistributionRows; clvValues: number[] } {
  const count = <T>(key: (p: Scored) => string, make: (p: Scored, n: number) => T) => {
    const m = new Map<string, { p: Scored; n: number }>();
    for (const p of ps) m.set(key(p), { p, n: (m.get(key(p))?.n ?? 0) + 1 });
    return [...m.values()].map(({ p, n }) => make(p, n));
  };
  const clvs = ps.map((p) => p.clv).filter((v): v is number => v !== null);
  const sorted = [...clvs].sort((a, b) => a - b);
  const mid = sorted.length / 2;
  return {
    rows: {
      grid: count(
        (p) => `${p.r}:${p.f}`,
        (p, n) => ({ r: p.r, f: p.f, profiles: n }),
      ),
      segments: count(
        (p) => p.segment,
        (p, n) => ({ segment: p.segment, profiles: n }),
      ),
      churn: count(
        (p) => String(p.churn),
        (p, n) => ({ bucket: p.churn, profiles: n }),
      ),
      clv: count(
        (p) => String(p.clv === null ? -1 : Math.floor(p.clv / 100)),
        (p, n) => ({ bucket: p.clv === null ? -1 : Math.floor(p.clv / 100), profiles: n }),
      ),
      stats: {
        scored: ps.length,
        gridded: ps.length,
        clv_min: clvs.length ? Math.min(...clvs) : null,
        clv_max: clvs.length ? Math.max(...clvs) : null,
        clv_median: !sorted.length
          ? null
          : sorted.length % 2
            ? sorted[Math.floor(mid)]!
            : (sorted[mid - 1]! + sorted[mid]!) / 2,
        clv_total: clvs.length ? clvs.reduce((a, b) => a + b, 0) : null,
      },
    },
    clvValues: clvs,
  };
}

const sortedRows = (d: ScoreDistributionRows) => {
  const by = <T>(xs: T[]) => [...xs].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
  return { ...d, grid: by(d.grid), segments: by(d.segments), churn: by(d.churn), clv: by(d.clv) };
};

const scored = fc.record({
  r: fc.integer({ min: 1, max: 5 }),
  f: fc.integer({ min: 1, max: 5 }),
  segment: fc.constantFrom('Champions', 'At Risk', 'Lost', 'New'),
  churn: fc.integer({ min: 0, max: 9 }),
  clv: fc.option(fc.integer({ min: 0, max: 900_000 }).map((c) => c / 100)),
});

describe('the score distributions of a workspace read in slices', () => {
  it('add up to what one pass over every profile answers, median included, however it is sliced', () => {
    fc.assert(
      fc.property(fc.array(scored, { maxLength: 60 }), fc.array(fc.nat(), { maxLength: 8 }), (ps, cuts) => {
        const ends = [...new Set(cuts.map((c) => c % (ps.length + 1)))].sort((a, b) => a - b);
        const slices = [0, ...ends, ps.length]
          .slice(0, -1)
          .map((from, i, all) => ps.slice(from, all[i + 1] ?? ps.length));
        const merged = mergeScoreDistributions(slices.map(distributionsOf));
        const whole = distributionsOf(ps).rows;
        // The total is a float sum: its order of addition differs by the last bits.
        const { clv_total: got, ...mergedStats } = merged.stats;
        const { clv_total: want, ...wholeStats } = whole.stats;
        expect({ ...sortedRows(merged), stats: mergedStats }).toEqual({
          ...sortedRows(whole),
          stats: wholeStats,
        });
        if (want === null) expect(got).toBeNull();
        else expect(got).toBeCloseTo(want, 6);
      }),
    );
  });

  it('answers zeros and nulls for no slice at all', () => {
    expect(mergeScoreDistributions([]).stats).toEqual({
      scored: 0,
      gridded: 0,
      clv_min: null,
      clv_max: null,
      clv_median: null,
      clv_total: null,
    });
  });
});
