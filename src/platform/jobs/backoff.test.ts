import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { backoffCeilingMs, backoffMs } from './backoff';

const policy = fc.record({
  baseMs: fc.integer({ min: 1, max: 60_000 }),
  capMs: fc.integer({ min: 1, max: 3_600_000 }),
});

describe('retry backoff', () => {
  it('waits a random delay below a ceiling that doubles with each attempt until the cap', () => {
    fc.assert(
      fc.property(
        policy,
        fc.integer({ min: 1, max: 2_000 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (p, n, r) => {
          const ceiling = backoffCeilingMs(n, p);
          expect(ceiling).toBe(Math.min(p.capMs, p.baseMs * 2 ** (n - 1)));
          expect(ceiling).toBeLessThanOrEqual(p.capMs);
          expect(backoffCeilingMs(n + 1, p)).toBeGreaterThanOrEqual(ceiling);
          const d = backoffMs(n, p, () => r);
          expect(d).toBeGreaterThanOrEqual(0);
          expect(d).toBeLessThan(Math.max(1, ceiling));
        },
      ),
    );
  });

  it('spreads retries over the whole range (full jitter), not around one value', () => {
    const p = { baseMs: 1_000, capMs: 60_000 };
    const delays = Array.from({ length: 2_000 }, () => backoffMs(4, p));
    const mean = delays.reduce((a, b) => a + b, 0) / delays.length;
    expect(Math.min(...delays)).toBeLessThan(800);
    expect(Math.max(...delays)).toBeGreaterThan(7_200);
    expect(mean).toBeGreaterThan(3_600);
    expect(mean).toBeLessThan(4_400);
  });

  it('never exceeds the cap, however many attempts failed', () => {
    expect(backoffCeilingMs(10_000, { baseMs: 1_000, capMs: 600_000 })).toBe(600_000);
    expect(backoffMs(10_000, { baseMs: 1_000, capMs: 600_000 }, () => 0.999999)).toBeLessThan(600_000);
  });
});
