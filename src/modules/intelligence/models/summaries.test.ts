import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { mergePurchaseDays, summarizeCustomer, toUtcDay } from './summaries';

const AS_OF = '2024-03-31T00:00:00Z';

describe('summarizeCustomer', () => {
  it('merges same-UTC-day orders, excludes the first day from z̄, measures weeks', () => {
    const s = summarizeCustomer(
      [
        { at: '2024-01-01T09:00:00Z', amount: 10 },
        { at: '2024-01-01T23:59:59Z', amount: 5 }, // same UTC day: one transaction of 15
        { at: '2024-01-15T00:00:00Z', amount: 20 },
        { at: '2024-01-29T12:00:00Z', amount: 30 },
        { at: '2024-01-29T13:00:00Z', amount: 10 },
      ],
      AS_OF,
    );
    expect(s).toEqual({ x: 2, tx: 4, T: 90 / 7, zbar: 30, totalSpend: 75, daysSinceLast: 62 });
  });

  it('uses UTC days, whatever the offset the timestamp was written in', () => {
    const s = summarizeCustomer(
      [
        { at: '2024-01-01T23:30:00-02:00', amount: 1 }, // 2024-01-02 01:30 UTC
        { at: '2024-01-02T05:00:00Z', amount: 1 },
      ],
      AS_OF,
    );
    expect(s?.x).toBe(0);
    expect(s?.totalSpend).toBe(2);
  });

  it('ignores orders after asOf, and returns null when nothing is left', () => {
    const later = [{ at: '2024-04-01T00:00:00Z', amount: 9 }];
    expect(summarizeCustomer(later, AS_OF)).toBeNull();
    const s = summarizeCustomer([{ at: '2024-03-31T00:00:00Z', amount: 4 }, ...later], AS_OF);
    expect(s).toEqual({ x: 0, tx: 0, T: 0, zbar: 0, totalSpend: 4, daysSinceLast: 0 });
  });

  it('holds the invariants 0 ≤ t_x ≤ T, x = purchase days − 1, z̄ = 0 iff x = 0 (for positive amounts)', () => {
    const day = 86_400_000;
    const start = Date.parse('2023-01-01T00:00:00Z');
    const order = fc.record({
      at: fc.integer({ min: 0, max: 500 * day }).map((ms) => new Date(start + ms)),
      amount: fc.double({ min: 0.01, max: 1000, noNaN: true }),
    });
    fc.assert(
      fc.property(fc.array(order, { minLength: 1, maxLength: 30 }), (orders) => {
        const asOf = new Date(start + 400 * day);
        const s = summarizeCustomer(orders, asOf);
        const days = new Set(orders.filter((o) => o.at <= asOf).map((o) => toUtcDay(o.at)));
        if (days.size === 0) {
          expect(s).toBeNull();
          return;
        }
        expect(s!.x).toBe(days.size - 1);
        expect(s!.tx).toBeGreaterThanOrEqual(0);
        expect(s!.tx).toBeLessThanOrEqual(s!.T);
        expect(s!.zbar > 0).toBe(s!.x > 0);
        expect(mergePurchaseDays(orders, asOf)).toHaveLength(days.size);
      }),
    );
  });
});
