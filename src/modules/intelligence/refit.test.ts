import { describe, expect, it } from 'vitest';
import { REFIT_MIN_INTERVAL_MS, refitDue } from './drain';

const fittedAt = new Date('2026-11-24T08:00:00Z');
const later = (ms: number) => new Date(fittedAt.getTime() + ms);
const minutes = (n: number) => n * 60_000;

describe('the automatic refit', () => {
  it('waits for 50 rescored profiles, or 5% of the fit’s customers, whichever is more', () => {
    const late = later(REFIT_MIN_INTERVAL_MS);
    expect(refitDue({ changed_since_fit: 49, customers_at_fit: 100 }, fittedAt, late)).toBe(false);
    expect(refitDue({ changed_since_fit: 50, customers_at_fit: 100 }, fittedAt, late)).toBe(true);
    expect(refitDue({ changed_since_fit: 4_999, customers_at_fit: 100_000 }, fittedAt, late)).toBe(false);
    expect(refitDue({ changed_since_fit: 5_000, customers_at_fit: 100_000 }, fittedAt, late)).toBe(true);
  });

  it('runs at most once in ten minutes while the data grows by less than its size', () => {
    const state = { changed_since_fit: 20_000, customers_at_fit: 100_000 };
    expect(refitDue(state, fittedAt, later(minutes(1)))).toBe(false);
    expect(refitDue(state, fittedAt, later(minutes(10) - 1))).toBe(false);
    expect(refitDue(state, fittedAt, later(minutes(10)))).toBe(true);
  });

  it('refits at once when the changes reach the fit’s whole customer count (a bulk import)', () => {
    expect(refitDue({ changed_since_fit: 1_000, customers_at_fit: 1_000 }, fittedAt, later(1))).toBe(true);
    expect(refitDue({ changed_since_fit: 999, customers_at_fit: 1_000 }, fittedAt, later(1))).toBe(false);
    // A fit of very few customers still waits for the 50 changes.
    expect(refitDue({ changed_since_fit: 10, customers_at_fit: 3 }, fittedAt, later(1))).toBe(false);
  });

  it('fits about once per doubling while 100k customers arrive in bulk, not at every 5%', () => {
    let customers = 50;
    let fits = 0;
    let rescored = 0;
    for (let at = 0, changed = 0, total = 50; total < 100_000; total++) {
      changed++;
      at += 1; // one new customer a millisecond: the whole import well inside ten minutes
      if (refitDue({ changed_since_fit: changed, customers_at_fit: customers }, fittedAt, later(at))) {
        fits++;
        rescored += total;
        customers = total;
        changed = 0;
      }
    }
    expect(fits).toBeLessThanOrEqual(12);
    expect(rescored).toBeLessThan(250_000);
  });
});
