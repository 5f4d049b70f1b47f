import fc from 'fast-check';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createTimestamptzParser } from './timestamps';

// pg's own parser (postgres-date): this file does not load postgres.ts, which replaces it.
const pgParser = pg.types.getTypeParser(1184, 'text') as (text: string) => unknown;
let fellBack = 0;
const parse = createTimestamptzParser((text) => {
  fellBack++;
  return pgParser(text);
});

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** An instant as PostgreSQL prints a timestamptz in a session whose zone is `offsetS` east of UTC. */
function printed(epochMs: number, micros: number, offsetS: number): string {
  const local = new Date(epochMs + offsetS * 1000);
  const fraction = pad((epochMs - Math.floor(epochMs / 1000) * 1000) * 1000 + micros, 6).replace(/0+$/, '');
  const abs = Math.abs(offsetS);
  const zone =
    (offsetS < 0 ? '-' : '+') +
    pad(Math.floor(abs / 3600)) +
    (abs % 3600 === 0 ? '' : `:${pad(Math.floor((abs % 3600) / 60))}`) +
    (abs % 60 === 0 ? '' : `:${pad(abs % 60)}`);
  return (
    `${pad(local.getUTCFullYear(), 4)}-${pad(local.getUTCMonth() + 1)}-${pad(local.getUTCDate())} ` +
    `${pad(local.getUTCHours())}:${pad(local.getUTCMinutes())}:${pad(local.getUTCSeconds())}` +
    (fraction ? `.${fraction}` : '') +
    zone
  );
}

describe('reading timestamptz values', () => {
  it('gives the instant PostgreSQL printed, to the millisecond, in any zone and with microseconds', () => {
    fellBack = 0;
    fc.assert(
      fc.property(
        fc.integer({ min: Date.UTC(1000, 0, 2), max: Date.UTC(9999, 11, 30) }),
        fc.integer({ min: 0, max: 999 }),
        fc.constantFrom(
          0,
          3600,
          -8 * 3600,
          5 * 3600 + 1800,
          -(3 * 3600 + 1800),
          14 * 3600,
          -(17 * 60 + 30) - 3600,
          1172,
        ),
        (epochMs, micros, offsetS) => {
          const text = printed(epochMs, micros, offsetS);
          const got = parse(text) as Date;
          expect(got.getTime(), text).toBe(epochMs);
          expect(got.getTime(), text).toBe((pgParser(text) as Date).getTime());
        },
      ),
      { numRuns: 2000 },
    );
    // Read by this parser, not handed on.
    expect(fellBack).toBe(0);
  });

  it('leaves what it does not read to pg’s own parser: BC years, early years, infinity', () => {
    for (const text of [
      '0044-03-15 12:00:00+00 BC',
      '0099-12-31 23:59:59.5+00',
      'infinity',
      '-infinity',
      '2024-01-05 10:11:12+00:00:00:00',
      '2024-01-05 10:11:12 UTC',
    ]) {
      const mine = parse(text);
      const theirs = pgParser(text);
      expect(mine instanceof Date ? mine.getTime() : mine, text).toEqual(
        theirs instanceof Date ? theirs.getTime() : theirs,
      );
    }
  });
});
