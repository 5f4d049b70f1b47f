import type { ScoreDistributionRows } from './scores.repo';

/**
 * The distributions of a whole workspace from those of its slices (readScoreDistributionSlice):
 * counts add up cell by cell and bucket by bucket, the extremes are the slices' extremes, and the
 * median is taken of every slice's CLV values together (percentile_cont(0.5): the mean of the two
 * middle values of an even count), so the answer is the one-pass read's. Pure.
 */
export function mergeScoreDistributions(
  parts: ReadonlyArray<{ rows: ScoreDistributionRows; clvValues: readonly number[] }>,
): ScoreDistributionRows {
  const rows = parts.map((p) => p.rows);
  const values = parts.flatMap((p) => p.clvValues).sort((a, b) => a - b);
  const defined = (xs: Array<number | null>) => xs.filter((x): x is number => x !== null);
  const mins = defined(rows.map((r) => r.stats.clv_min));
  const maxs = defined(rows.map((r) => r.stats.clv_max));
  const totals = defined(rows.map((r) => r.stats.clv_total));
  const mid = values.length / 2;
  return {
    grid: addUp(
      rows.map((r) => r.grid),
      (x) => `${x.r}:${x.f}`,
    ),
    segments: addUp(
      rows.map((r) => r.segments),
      (x) => x.segment,
    ),
    churn: addUp(
      rows.map((r) => r.churn),
      (x) => String(x.bucket),
    ),
    clv: addUp(
      rows.map((r) => r.clv),
      (x) => String(x.bucket),
    ),
    stats: {
      scored: rows.reduce((n, r) => n + r.stats.scored, 0),
      gridded: rows.reduce((n, r) => n + r.stats.gridded, 0),
      clv_min: mins.length ? Math.min(...mins) : null,
      clv_max: maxs.length ? Math.max(...maxs) : null,
      clv_median:
        values.length === 0
          ? null
          : values.length % 2
            ? values[Math.floor(mid)]!
            : (values[mid - 1]! + values[mid]!) / 2,
      clv_total: totals.length ? totals.reduce((a, b) => a + b, 0) : null,
    },
  };
}

/** The counts of several lists added up per key (the first list's row keeps the other fields). */
function addUp<T extends { profiles: number }>(
  lists: ReadonlyArray<readonly T[]>,
  key: (x: T) => string,
): T[] {
  const m = new Map<string, T>();
  for (const list of lists)
    for (const x of list) {
      const had = m.get(key(x));
      m.set(key(x), had ? { ...had, profiles: had.profiles + x.profiles } : { ...x });
    }
  return [...m.values()];
}
