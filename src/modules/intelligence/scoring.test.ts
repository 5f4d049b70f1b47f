import { describe, expect, it } from 'vitest';
import { createPurchaseAccumulator } from './models/purchase-data';
import { computeRfmCuts, scoreRfmWithCuts } from './scoring';

/** The cut points as the fit computed them before it counted distinct values: sort every value. */
function sortedCuts(values: number[]): number[] {
  const n = values.length;
  if (n <= 1) return [];
  const sorted = Float64Array.from(values).sort();
  return [2, 3, 4, 5].map((s) => sorted[Math.ceil(((s - 1) * (n - 1)) / 5) - 1]!);
}

const customer = (i: number, totalSpend: number) => ({
  x: i % 7,
  tx: 0,
  T: 0,
  zbar: 0,
  totalSpend,
  daysSinceLast: (i * 37) % 400,
});

describe('RFM cut points from counts of distinct values', () => {
  it('are the values a sort of every customer gives, with many ties', () => {
    const customers = Array.from({ length: 10_001 }, (_, i) => customer(i, 20 + ((i * 13) % 60)));
    const cuts = computeRfmCuts(customers);
    expect(cuts.n).toBe(10_001);
    // Recency is negated (larger is better); a count keeps −0 as 0, which compares the same.
    expect(cuts.r).toEqual(sortedCuts(customers.map((c) => 0 - c.daysSinceLast)).map((v) => v + 0));
    expect(cuts.f).toEqual(sortedCuts(customers.map((c) => c.x + 1)));
    expect(cuts.m).toEqual(sortedCuts(customers.map((c) => c.totalSpend)));
  });

  it('are the same when a dimension has too many distinct values to count (a column again)', () => {
    // 70,000 distinct totals: past the 65,536 distinct values a dimension counts.
    const customers = Array.from({ length: 90_000 }, (_, i) => customer(i, ((i * 7919) % 70_000) / 100));
    const cuts = computeRfmCuts(customers);
    expect(cuts.m).toEqual(sortedCuts(customers.map((c) => c.totalSpend)));
    expect(cuts.f).toEqual(sortedCuts(customers.map((c) => c.x + 1)));
  });

  it('are empty for one customer, who scores 1', () => {
    const cuts = computeRfmCuts([customer(3, 10)]);
    expect(cuts).toEqual({ n: 1, r: [], f: [], m: [] });
    expect(scoreRfmWithCuts(cuts, customer(3, 10)).scores).toEqual({ r: 1, f: 1, m: 1 });
  });
});

describe('condensed purchase rows', () => {
  it('group whole-day and other triples alike, in the order first seen, with their weights', () => {
    const acc = createPurchaseAccumulator();
    const rows = [
      { x: 2, tx: 3 / 7, T: 10 / 7 },
      { x: 1, tx: 0.5, T: 1.25 }, // not whole days: the string-keyed path
      { x: 2, tx: 3 / 7, T: 10 / 7 },
      { x: 0, tx: 0, T: 10 / 7 },
      { x: 1, tx: 0.5, T: 1.25 },
      { x: 2, tx: 3 / 7, T: 11 / 7 },
    ];
    for (const r of rows) acc.add(r);
    acc.add({ x: 0, tx: 0, T: 10 / 7 }, 5);
    const d = acc.finish();
    expect([...d.x]).toEqual([2, 1, 0, 2]);
    expect([...d.tx]).toEqual([3 / 7, 0.5, 0, 3 / 7]);
    expect([...d.T]).toEqual([10 / 7, 1.25, 10 / 7, 11 / 7]);
    expect([...d.weight]).toEqual([2, 2, 6, 1]);
    expect(d.customers).toBe(11);
    expect(d.repeatBuyers).toBe(5);
    expect([...d.distinctT]).toEqual([1.25, 10 / 7, 11 / 7]);
    expect([...d.TIndex]).toEqual([1, 0, 1, 2]);
  });

  it('grow past their first allocation', () => {
    const acc = createPurchaseAccumulator();
    for (let i = 0; i < 5000; i++) acc.add({ x: 1, tx: (i % 2500) / 7, T: 2500 / 7 });
    const d = acc.finish();
    expect(d.x.length).toBe(2500);
    expect(d.weight.every((w) => w === 2)).toBe(true);
    expect(d.tx[2499]).toBe(2499 / 7);
  });
});
