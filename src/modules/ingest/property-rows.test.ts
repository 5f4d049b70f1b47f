import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDb, type TestDb } from '../../platform/jobs/jobs.test-kit';
import { markEventsApplied } from './applied.repo';
import { MARKER_ROW, propertyRows } from './property-rows';

/**
 * The property rows the pipeline writes are walked in the service (property-rows.ts); the SQL
 * function event_property_rows (migrations/0029) is their definition. For any payload, stored as
 * JSON text (so numbers keep literals JavaScript cannot hold) and read back as the pipeline reads
 * it, the rows markEventsApplied writes are exactly the function's, on the engine under test.
 */
let t: TestDb;
let ws: string;
beforeAll(async () => {
  t = await openTestDb();
  ws = randomUUID();
  await t.db.query('INSERT INTO workspaces (id, name) VALUES ($1, $2)', [ws, 'property rows']);
});
afterAll(() => t?.close());

const NUMBERS = [
  '0',
  '-0',
  '7',
  '1.50',
  '0.1',
  '-3.25e-7',
  '1e30',
  '12345678901234567891',
  '9007199254740993',
];
const emoji = (n: number) => '😀'.repeat(n);
// Lengths around 500 characters in code points (emoji are two UTF-16 units), under and over the
// 1600 bytes an index row may take.
const STRINGS = [
  '',
  'a',
  'hé',
  emoji(3),
  emoji(260),
  'x'.repeat(500),
  'x'.repeat(501),
  `${'x'.repeat(450)}${emoji(60)}`,
  emoji(500),
  emoji(501),
  'é'.repeat(900),
];
const KEYS = ['a', 'b', 'items', 'sku', '0', '', 'a.b', 'k'.repeat(120), emoji(40), '__proto__'];

/** JSON text, built by hand so numbers are literals (1.50 stays 1.50 in the database). */
const jsonText: fc.Arbitrary<string> = fc.letrec<{ value: string }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom(...NUMBERS),
    fc.constantFrom(...STRINGS).map((s) => JSON.stringify(s)),
    fc.constantFrom('true', 'false', 'null'),
    fc.array(tie('value'), { maxLength: 6 }).map((xs) => `[${xs.join(',')}]`),
    fc
      .array(fc.tuple(fc.constantFrom(...KEYS), tie('value')), { maxLength: 6 })
      .map((kvs) => `{${kvs.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`),
  ),
})).value;

/** A payload: an object, sometimes nested deeper than queries address, sometimes with hundreds of rows. */
const payloadText = fc.oneof(
  fc
    .array(fc.tuple(fc.constantFrom(...KEYS), jsonText), { maxLength: 8 })
    .map((kvs) => `{${kvs.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`),
  fc.integer({ min: 8, max: 14 }).map((d) => `${'{"d":'.repeat(d)}1.50${'}'.repeat(d)}`),
  fc
    .integer({ min: 250, max: 262 })
    .map((n) => JSON.stringify({ tags: Array.from({ length: n }, (_, i) => i) })),
  fc.integer({ min: 120, max: 130 }).map((n) => JSON.stringify({ a: Array.from({ length: n }, () => 'x') })),
);

type Row = {
  seq: string;
  path: string;
  kind: string;
  num: string | null;
  str: string | null;
  bool: boolean | null;
};
const key = (r: Row) => JSON.stringify([r.seq, r.path, r.kind, r.num, r.str, r.bool]);
const sorted = (rows: Row[]) => rows.map(key).sort();

async function storeAndApply(texts: readonly string[]): Promise<void> {
  await t.db.query('DELETE FROM event_properties WHERE workspace_id = $1', [ws]);
  await t.db.query('DELETE FROM event_profiles WHERE workspace_id = $1', [ws]);
  await t.db.query('DELETE FROM events WHERE workspace_id = $1', [ws]);
  const { rows } = await t.db.query<{ seq: string; payload: unknown }>(
    `INSERT INTO events (id, workspace_id, event_type, event_name, payload, occurred_at, received_at)
     SELECT 'evt_' || gen_random_uuid(), $1, 'track', 'Tested', p::jsonb, now(), now()
       FROM unnest($2::text[]) WITH ORDINALITY AS u(p, n) ORDER BY n
     RETURNING seq, payload`,
    [ws, texts],
  );
  const profile = randomUUID();
  await markEventsApplied(
    t.db,
    rows.map((r) => ({ seq: Number(r.seq), profile_id: profile, payload: r.payload })),
  );
}

async function written(): Promise<Row[]> {
  const { rows } = await t.db.query<Row>(
    `SELECT seq::text, path, kind::text, num::text, str, bool FROM event_properties WHERE workspace_id = $1`,
    [ws],
  );
  return rows;
}

async function defined(): Promise<Row[]> {
  const { rows } = await t.db.query<Row>(
    `SELECT e.seq::text, r.path, r.kind::text, r.num::text, r.str, r.bool
       FROM events e CROSS JOIN LATERAL event_property_rows(e.payload) r WHERE e.workspace_id = $1`,
    [ws],
  );
  return rows;
}

describe('property rows walked in the service', () => {
  it('equal the rows of the SQL function for any payload, numbers exact', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(payloadText, { minLength: 1, maxLength: 4 }), async (texts) => {
        await storeAndApply(texts);
        expect(sorted(await written())).toEqual(sorted(await defined()));
      }),
      { numRuns: 120 },
    );
  });

  it('keep a number the way it was sent, not as JavaScript read it', async () => {
    await storeAndApply(['{"price": 1.50, "id": 12345678901234567891}']);
    const byPath = Object.fromEntries((await written()).map((r) => [r.path, r.num]));
    expect(byPath).toEqual({ price: '1.50', id: '12345678901234567891' });
  });

  it('give an event with more than 256 rows the marker alone', () => {
    expect(propertyRows({ tags: Array.from({ length: 200 }, (_, i) => i) })).toEqual([MARKER_ROW]);
    expect(propertyRows({ tags: Array.from({ length: 127 }, (_, i) => i) })).toHaveLength(255);
  });

  it('give an event whose value is too wide for an index the marker alone', async () => {
    await storeAndApply([JSON.stringify({ note: emoji(450), ok: 1 })]);
    expect((await written()).map((r) => [r.path, r.kind])).toEqual([['', 'x']]);
  });
});
