import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cronMatches, nextTick, parseSchedule, type Schedule } from './schedule';

type Cron = Extract<Schedule, { kind: 'cron' }>;
const at = (iso: string) => new Date(iso);
const next = (spec: string, after: string) => nextTick(parseSchedule(spec), at(after))?.toISOString();

/** A random cron field: *, n, a-b, *∕k, a-b/k or a list of them. */
const field = (min: number, max: number) => {
  const n = fc.integer({ min, max });
  const range = fc.tuple(n, n).map(([a, b]) => (a <= b ? `${a}-${b}` : `${b}-${a}`));
  const part = fc.oneof(
    fc.constant('*'),
    n.map(String),
    range,
    fc.integer({ min: 1, max: max - min + 1 }).map((k) => `*/${k}`),
    fc.tuple(range, fc.integer({ min: 1, max: 9 })).map(([r, k]) => `${r}/${k}`),
  );
  return fc.array(part, { minLength: 1, maxLength: 3 }).map((ps) => ps.join(','));
};
const cronSpec = fc
  .tuple(field(0, 59), field(0, 23), fc.oneof(fc.constant('*'), field(1, 28)), field(1, 12), field(0, 7))
  .map((f) => f.join(' '));
const instant = fc.date({
  min: at('2001-01-01T00:00:00Z'),
  max: at('2090-01-01T00:00:00Z'),
  noInvalidDate: true,
});

describe('schedule specs', () => {
  it('reads "every <n><unit>" as ticks at multiples of the period since the epoch', () => {
    expect(next('every 5m', '2026-01-01T10:02:30Z')).toBe('2026-01-01T10:05:00.000Z');
    expect(next('every 5m', '2026-01-01T10:05:00Z')).toBe('2026-01-01T10:10:00.000Z');
    expect(next('every 30s', '2026-01-01T10:00:29.999Z')).toBe('2026-01-01T10:00:30.000Z');
    expect(next('Every 1d', '2026-01-01T10:00:00Z')).toBe('2026-01-02T00:00:00.000Z');
  });

  it('reads five cron fields in UTC, with ranges, steps and lists', () => {
    expect(next('30 3 * * *', '2026-01-01T03:30:00Z')).toBe('2026-01-02T03:30:00.000Z');
    expect(next('*/15 * * * *', '2026-01-01T10:16:00Z')).toBe('2026-01-01T10:30:00.000Z');
    expect(next('0 9-17/4 * * 1-5', '2026-01-02T17:00:00Z')).toBe('2026-01-05T09:00:00.000Z'); // Fri → Mon
    expect(next('0 0 1 * *', '2026-01-15T00:00:00Z')).toBe('2026-02-01T00:00:00.000Z');
    expect(next('0 0 29 2 *', '2026-03-01T00:00:00Z')).toBe('2028-02-29T00:00:00.000Z');
    expect(next('0 0 * * 7', '2026-01-01T00:00:00Z')).toBe('2026-01-04T00:00:00.000Z'); // 7 is Sunday
  });

  it('fires on either day when both day-of-month and day-of-week are restricted, as cron does', () => {
    // The 13th, or any Friday: Friday 2026-01-02 comes first.
    expect(next('0 0 13 * 5', '2026-01-01T00:00:00Z')).toBe('2026-01-02T00:00:00.000Z');
  });

  it.each([
    ['', /neither/],
    ['every 0s', /between 1s and 366d/],
    ['every 400d', /between 1s and 366d/],
    ['every 5 minutes', /neither/],
    ['60 * * * *', /minute field "60" is outside 0-59/],
    ['* 24 * * *', /hour/],
    ['* * 0 * *', /day-of-month/],
    ['* * * 13 *', /month/],
    ['5-1 * * * *', /outside/],
    ['*/0 * * * *', /step of 0/],
    ['a * * * *', /is not/],
    ['0 0 30 2 *', /never fires/],
  ])('refuses %j', (spec, why) => {
    expect(() => parseSchedule(spec)).toThrow(why);
  });

  it('finds, for any cron spec and instant, the first matching minute after it', () => {
    fc.assert(
      fc.property(cronSpec, instant, (spec, after) => {
        const s = parseSchedule(spec) as Cron;
        const t = nextTick(s, after);
        expect(t).not.toBeNull();
        expect(t!.getTime()).toBeGreaterThan(after.getTime());
        expect(t!.getUTCSeconds() + t!.getUTCMilliseconds()).toBe(0);
        expect(cronMatches(s, t!)).toBe(true);
        // No earlier minute matches (checked minute by minute when the gap is under three days).
        const first = Math.floor(after.getTime() / 60_000) * 60_000 + 60_000;
        if (t!.getTime() - first < 3 * 86_400_000) {
          for (let m = first; m < t!.getTime(); m += 60_000) expect(cronMatches(s, new Date(m))).toBe(false);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('gives every period a tick within one period, on the period grid, after any instant', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1000 }),
        fc.constantFrom('s', 'm', 'h'),
        instant,
        (n, unit, after) => {
          const s = parseSchedule(`every ${n}${unit}`);
          if (s.kind !== 'every') throw new Error('expected an every-schedule');
          const t = nextTick(s, after)!.getTime();
          expect(t).toBeGreaterThan(after.getTime());
          expect(t - after.getTime()).toBeLessThanOrEqual(s.periodMs);
          expect(t % s.periodMs).toBe(0);
        },
      ),
    );
  });
});
