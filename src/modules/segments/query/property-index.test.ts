import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDb, type TestDb } from '../../../platform/jobs/jobs.test-kit';
import { compileSegment } from './compile';
import { type EvalProfile, evaluateSegment } from './evaluate';
import { parseSegmentQuery } from './parse';
import {
  blankProfile,
  clearWorkspace,
  createWorkspaceRow,
  DAY,
  loadProfiles,
  NOW,
  selectMatching,
} from './query.test-kit';
import type { SegmentQuery } from './types';

/**
 * Event property tests (`where`) are answered from the typed rows of event_properties (migration
 * 0029), not from the events' payloads: the plan of a compiled query reads no row of the event log
 * unless an event's payload was too big for the table, and the edge cases of the row encoding give
 * the evaluator's answers, on the engine under test.
 */
let t: TestDb;
let ws: string;
beforeAll(async () => {
  t = await openTestDb();
  ws = await createWorkspaceRow(t.db);
});
afterAll(() => t?.close());

const ago = (days: number) => new Date(NOW.getTime() - days * DAY);
const cart = (payload: unknown, days = 1) => ({
  type: 'track',
  name: 'Added to Cart',
  payload,
  occurred_at: ago(days),
});

function parsed(input: unknown): SegmentQuery {
  const r = parseSegmentQuery(input);
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.query;
}

/** Loads the named profiles; the query's matching names, checked equal in SQL (both forms) and in memory. */
async function select(people: Record<string, Partial<EvalProfile>>, input: unknown): Promise<string[]> {
  const query = parsed(input);
  const named = Object.entries(people).map(([name, over]) => ({ name, p: blankProfile(over) }));
  await clearWorkspace(t.db, ws);
  await loadProfiles(
    t.db,
    ws,
    named.map((n) => n.p),
  );
  const ctx = { now: NOW, segments: new Map<string, SegmentQuery>() };
  const nameOf = (id: string) => named.find((n) => n.p.id === id)!.name;
  const inMemory = named
    .filter((n) => evaluateSegment(query, n.p, ctx))
    .map((n) => n.name)
    .sort();
  expect((await selectMatching(t.db, ws, query, ctx)).map(nameOf).sort()).toEqual(inMemory);
  expect((await selectMatching(t.db, ws, query, { ...ctx, strategy: 'set' })).map(nameOf).sort()).toEqual(
    inMemory,
  );
  return inMemory;
}

/** Actual loops of every plan node over `table` when the compiled query runs (EXPLAIN ANALYZE). */
async function loopsOver(table: string, input: unknown, strategy: 'correlated' | 'set'): Promise<number[]> {
  const { sql, params, joins } = compileSegment(parsed(input), {
    now: NOW,
    segments: new Map(),
    firstParam: 2,
    strategy,
  });
  const { rows } = await t.db.query<{ 'QUERY PLAN': unknown }>(
    `EXPLAIN (ANALYZE, FORMAT JSON) SELECT p.id FROM profiles p ${joins}
      WHERE p.workspace_id = $1 AND p.merged_into IS NULL AND (${sql})`,
    [ws, ...params],
  );
  const raw = rows[0]!['QUERY PLAN'];
  const plan = (typeof raw === 'string' ? JSON.parse(raw) : raw) as Array<{ Plan: PlanNode }>;
  const loops: number[] = [];
  const walk = (n: PlanNode) => {
    if (n['Relation Name'] === table) loops.push(n['Actual Loops']);
    for (const c of n.Plans ?? []) walk(c);
  };
  walk(plan[0]!.Plan);
  return loops;
}
/** How many times the compiled query read an event's payload (event_payload_at, migration 0029). */
async function payloadReads(input: unknown, strategy: 'correlated' | 'set'): Promise<number> {
  const { sql, params, joins } = compileSegment(parsed(input), {
    now: NOW,
    segments: new Map(),
    firstParam: 2,
    strategy,
  });
  return t.db.transaction(async (tx) => {
    await tx.query("SET LOCAL track_functions = 'all'");
    await tx.query(
      `SELECT p.id FROM profiles p ${joins} WHERE p.workspace_id = $1 AND p.merged_into IS NULL AND (${sql})`,
      [ws, ...params],
    );
    const { rows } = await tx.query<{ calls: string }>(
      "SELECT calls FROM pg_stat_xact_user_functions WHERE funcname = 'event_payload_at'",
    );
    return Number(rows[0]?.calls ?? 0);
  });
}

interface PlanNode {
  'Relation Name'?: string;
  'Actual Loops': number;
  Plans?: PlanNode[];
}

const WHERE_QUERIES = [
  { property: 'price', op: 'gt', value: 10 },
  { property: 'sku', op: 'in', value: ['p1', 'p7'] },
  { property: 'product.brand', op: 'eq', value: 'acme' },
  { property: 'tags', op: 'contains', value: 'vip' },
  { property: 'sku', op: 'starts_with', value: 'p' },
  { property: 'gift', op: 'not_exists' },
  { property: 'price', op: 'between', value: [5, 50] },
];

describe('a property test', () => {
  it('reads the typed property rows and never the event log (the payloads), whatever the operator', async () => {
    const people: Record<string, Partial<EvalProfile>> = {};
    for (let i = 0; i < 30; i++) {
      people[`p${i}`] = {
        events: Array.from({ length: 6 }, (_, j) =>
          cart({
            price: (i * 7 + j * 3) % 60,
            sku: `p${(i + j) % 9}`,
            product: { brand: j % 2 ? 'acme' : 'other' },
            tags: ['vip'],
          }),
        ),
      };
    }
    await select(people, { event: { name: 'Added to Cart' } }); // loads them
    await t.db.query('ANALYZE event_properties');
    for (const w of WHERE_QUERIES) {
      for (const strategy of ['correlated', 'set'] as const) {
        for (const count of [undefined, { op: 'gte', value: 2 }]) {
          const q = {
            event: { name: 'Added to Cart', within_days: 30, where: [w] },
            ...(count ? { count } : {}),
          };
          const what = JSON.stringify({ w, strategy, count });
          expect(await loopsOver('event_properties', q, strategy), what).not.toEqual([]);
          expect(await loopsOver('events', q, strategy), what).toEqual([]);
          // The fallback for an event too big for the table is in the SQL, but never runs for these.
          expect(await payloadReads(q, strategy), what).toBe(0);
        }
      }
    }
  });

  it('on an event whose payload the table cannot hold reads that event’s payload, and answers the same', async () => {
    const big = { price: 20, filler: Array.from({ length: 300 }, (_, i) => i) };
    const q = { event: { name: 'Added to Cart', where: [{ property: 'price', op: 'gt', value: 10 }] } };
    expect(
      await select({ big: { events: [cart(big)] }, small: { events: [cart({ price: 5 })] } }, q),
    ).toEqual(['big']);
    const { rows } = await t.db.query<{ path: string; kind: string }>(
      'SELECT path, kind FROM event_properties WHERE workspace_id = $1 ORDER BY path',
      [ws],
    );
    expect(rows).toEqual([
      { path: '', kind: 'x' },
      { path: 'price', kind: 'n' },
    ]);
    expect(await payloadReads(q, 'correlated')).toBeGreaterThan(0);
    expect(await payloadReads(q, 'set')).toBeGreaterThan(0);
  });
});

describe('the typed rows answer as the payload does', () => {
  const where = (w: unknown, count?: unknown) => ({
    event: { name: 'Added to Cart', where: [w] },
    ...(count ? { count } : {}),
  });

  it('numbers, strings and booleans compare only with their own type', async () => {
    const people = {
      num: { events: [cart({ v: 10 })] },
      str: { events: [cart({ v: '10' })] },
      yes: { events: [cart({ v: true })] },
      obj: { events: [cart({ v: { w: 1 } })] },
      nul: { events: [cart({ v: null })] },
      none: { events: [cart({})] },
    };
    expect(await select(people, where({ property: 'v', op: 'eq', value: 10 }))).toEqual(['num']);
    expect(await select(people, where({ property: 'v', op: 'gte', value: '1' }))).toEqual(['str']);
    expect(await select(people, where({ property: 'v', op: 'eq', value: true }))).toEqual(['yes']);
    expect(await select(people, where({ property: 'v', op: 'neq', value: 10 }))).toEqual([
      'obj',
      'str',
      'yes',
    ]);
    expect(await select(people, where({ property: 'v', op: 'not_in', value: [10, true] }))).toEqual([
      'obj',
      'str',
    ]);
    expect(await select(people, where({ property: 'v', op: 'in', value: ['10', true] }))).toEqual([
      'str',
      'yes',
    ]);
    expect(await select(people, where({ property: 'v', op: 'exists' }))).toEqual([
      'num',
      'obj',
      'str',
      'yes',
    ]);
    expect(await select(people, where({ property: 'v', op: 'not_exists' }))).toEqual(['none', 'nul']);
  });

  it('nested paths follow keys and array indexes, and never reach a key that contains a dot', async () => {
    const people = {
      nested: { events: [cart({ cart: { items: [{ sku: 'a1' }, { sku: 'b2' }] } })] },
      keyed: { events: [cart({ cart: { items: { 1: { sku: 'b2' } } } })] },
      dotted: { events: [cart({ 'cart.items': [{ sku: 'b2' }, { sku: 'b2' }] })] },
    };
    expect(await select(people, where({ property: 'cart.items.1.sku', op: 'eq', value: 'b2' }))).toEqual([
      'keyed',
      'nested',
    ]);
    expect(await select(people, where({ property: 'cart.items.0.sku', op: 'exists' }))).toEqual(['nested']);
  });

  it('contains finds an array element (once per event) or a substring, also past a long string’s first 500 characters', async () => {
    const long = `${'x'.repeat(600)}vip`;
    const people = {
      tagged: { events: [cart({ tags: ['vip', 'vip', 'new'] })] },
      nested: { events: [cart({ tags: [['vip']] })] },
      text: { events: [cart({ tags: 'a vip here' })] },
      long: { events: [cart({ tags: long })] },
      longElement: { events: [cart({ tags: [long] })] },
    };
    expect(await select(people, where({ property: 'tags', op: 'contains', value: 'vip' }))).toEqual([
      'long',
      'tagged',
      'text',
    ]);
    // Two equal elements are one event: "at least twice" needs two events.
    expect(
      await select(
        people,
        where({ property: 'tags', op: 'contains', value: 'vip' }, { op: 'gte', value: 2 }),
      ),
    ).toEqual([]);
    expect(await select(people, where({ property: 'tags', op: 'starts_with', value: 'xxx' }))).toEqual([
      'long',
    ]);
    expect(await select(people, where({ property: 'tags', op: 'gt', value: 'x'.repeat(500) }))).toEqual([
      'long',
    ]);
    expect(await select(people, where({ property: 'tags', op: 'eq', value: 'x'.repeat(500) }))).toEqual([]);
  });

  it('strings order by code point and prefixes are plain text', async () => {
    const people = {
      upper: { events: [cart({ s: 'Zed' })] },
      lower: { events: [cart({ s: 'abc' })] },
      accent: { events: [cart({ s: 'é' })] },
      percent: { events: [cart({ s: '%_x' })] },
    };
    expect(await select(people, where({ property: 's', op: 'gt', value: 'a' }))).toEqual(['accent', 'lower']);
    expect(await select(people, where({ property: 's', op: 'between', value: ['Z', 'b'] }))).toEqual([
      'lower',
      'upper',
    ]);
    expect(await select(people, where({ property: 's', op: 'starts_with', value: '%_' }))).toEqual([
      'percent',
    ]);
  });
});
