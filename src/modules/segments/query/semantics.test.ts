import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDb, type TestDb } from '../../../platform/jobs/jobs.test-kit';
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

/**
 * The documented semantics (docs/segments.md), case by case, on the engine under test: each query
 * must select exactly the named profiles, both as SQL and in the evaluator.
 */
let t: TestDb;
let ws: string;
beforeAll(async () => {
  t = await openTestDb();
  ws = await createWorkspaceRow(t.db);
});
afterAll(() => t?.close());

const ago = (days: number, ms = 0) => new Date(NOW.getTime() - days * DAY + ms);

/** Loads the named profiles, runs the query both ways, and answers the matching names. */
async function select(people: Record<string, Partial<EvalProfile>>, input: unknown): Promise<string[]> {
  const r = parseSegmentQuery(input);
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  const named = Object.entries(people).map(([name, over]) => ({ name, p: blankProfile(over) }));
  await clearWorkspace(t.db, ws);
  await loadProfiles(
    t.db,
    ws,
    named.map((n) => n.p),
  );
  const ctx = { now: NOW, segments: new Map() };
  const bySql = await selectMatching(t.db, ws, r.query, ctx);
  const nameOf = (id: string) => named.find((n) => n.p.id === id)!.name;
  const inMemory = named.filter((n) => evaluateSegment(r.query, n.p, ctx)).map((n) => n.name);
  expect(bySql.map(nameOf).sort()).toEqual(inMemory.sort());
  return inMemory.sort();
}

describe('missing values', () => {
  const people = {
    pro: { attributes: { plan: 'pro' } },
    free: { attributes: { plan: 'free' } },
    none: {},
    nul: { attributes: { plan: null } },
  };

  it('make every test false except not_exists, so neq and not_in mean "present and different"', async () => {
    expect(await select(people, { attribute: 'plan', op: 'neq', value: 'pro' })).toEqual(['free']);
    expect(await select(people, { attribute: 'plan', op: 'not_in', value: ['pro'] })).toEqual(['free']);
    expect(await select(people, { attribute: 'plan', op: 'not_exists' })).toEqual(['none', 'nul']);
  });

  it('are included by not, which is plain negation', async () => {
    expect(await select(people, { not: { attribute: 'plan', op: 'eq', value: 'pro' } })).toEqual([
      'free',
      'none',
      'nul',
    ]);
  });

  it('also hold for profile columns that are NULL', async () => {
    const p = { a: { email: 'a@x.io' }, b: {} };
    expect(await select(p, { field: 'email', op: 'neq', value: 'z@x.io' })).toEqual(['a']);
    expect(await select(p, { field: 'email', op: 'not_exists' })).toEqual(['b']);
  });
});

describe('types and text', () => {
  it('never compare a number with a string that looks like it', async () => {
    const p = { num: { attributes: { age: 10 } }, str: { attributes: { age: '10' } } };
    expect(await select(p, { attribute: 'age', op: 'eq', value: 10 })).toEqual(['num']);
    expect(await select(p, { attribute: 'age', op: 'gte', value: '1' })).toEqual(['str']);
  });

  it('contains finds an array element (not inside nested arrays) or a case-sensitive substring', async () => {
    const p = {
      tags: { attributes: { t: ['vip', 'beta'] } },
      nested: { attributes: { t: [['vip']] } },
      text: { attributes: { t: 'a VIP and a vip' } },
      upper: { attributes: { t: 'VIP' } },
    };
    expect(await select(p, { attribute: 't', op: 'contains', value: 'vip' })).toEqual(['tags', 'text']);
  });

  it('orders text by code point, the same on every database collation', async () => {
    const p = {
      emoji: { first_name: '😀' },
      fullwidth: { first_name: '\uFF5E' },
      latin: { first_name: 'Z' },
    };
    expect(await select(p, { field: 'first_name', op: 'gt', value: '\uFF5E' })).toEqual(['emoji']);
    expect(await select(p, { field: 'first_name', op: 'lt', value: 'a' })).toEqual(['latin']);
  });

  it('reads a number path segment as an array index', async () => {
    const p = { first: { attributes: { tags: ['x', 'y'] } }, second: { attributes: { tags: ['y', 'x'] } } };
    expect(await select(p, { attribute: 'tags.0', op: 'eq', value: 'x' })).toEqual(['first']);
  });
});

describe('values that are awkward in SQL array literals', () => {
  const odd = ['a"b', 'c,d', '{x}', 'back\\slash', 'NULL', ' pad ', "it's"];

  it('pass through text[] parameters intact, in lists and in attribute paths', async () => {
    const people = Object.fromEntries(
      odd.map((v, i) => [`p${i}`, { last_name: v, attributes: { [v]: { k: i } } }]),
    );
    expect(await select(people, { field: 'last_name', op: 'in', value: odd })).toEqual(
      Object.keys(people).sort(),
    );
    expect(await select(people, { field: 'last_name', op: 'not_in', value: ['NULL'] })).toHaveLength(
      odd.length - 1,
    );
    for (const [i, v] of odd.entries()) {
      expect(await select(people, { attribute: `${v}.k`, op: 'eq', value: i })).toEqual([`p${i}`]);
    }
  });
});

describe('event history', () => {
  const view = (days: number, ms = 0, price = 20) => ({
    type: 'track',
    name: 'Viewed',
    payload: { price },
    occurred_at: ago(days, ms),
  });

  it('counts within_days back from now, inclusive of the boundary instant', async () => {
    const p = { edge: { events: [view(30)] }, before: { events: [view(30, -1)] } };
    expect(await select(p, { event: { name: 'Viewed', within_days: 30 } })).toEqual(['edge']);
  });

  it('takes from as inclusive and to as exclusive', async () => {
    const from = ago(10).toISOString();
    const to = ago(5).toISOString();
    const p = { atFrom: { events: [view(10)] }, atTo: { events: [view(5)] } };
    expect(await select(p, { event: { from, to } })).toEqual(['atFrom']);
  });

  it('tests count and where, and "did not occur" as count eq 0', async () => {
    const p = {
      three: { events: [view(1), view(2), view(3, 0, 5)] },
      two: { events: [view(1), view(2)] },
      none: {},
    };
    const q = (count: unknown) => ({
      event: { name: 'Viewed', where: [{ property: 'price', op: 'gt', value: 10 }] },
      count,
    });
    expect(await select(p, q({ op: 'gte', value: 2 }))).toEqual(['three', 'two']);
    expect(await select(p, q({ op: 'eq', value: 0 }))).toEqual(['none']);
  });
});

describe('orders', () => {
  const order = (total: number, status = 'completed', items: unknown[] = []) => ({
    status,
    total,
    currency: 'EUR',
    items,
    occurred_at: ago(1),
  });

  it('count only completed orders unless a status is given', async () => {
    const p = { done: { orders: [order(5)] }, refunded: { orders: [order(5, 'refunded')] } };
    expect(await select(p, { order: {} })).toEqual(['done']);
    expect(await select(p, { order: { status: ['completed', 'refunded'] } })).toEqual(['done', 'refunded']);
  });

  it('sum totals exactly, in cents', async () => {
    const p = { exact: { orders: [order(0.1), order(0.2)] }, more: { orders: [order(0.31)] } };
    expect(await select(p, { order: {}, sum: { op: 'eq', value: 0.3 } })).toEqual(['exact']);
  });

  it('match a bought product when one item has every given item filter', async () => {
    const shoe = { product_id: 'p1', category: 'shoes' };
    const p = {
      same: { orders: [order(1, 'completed', [shoe])] },
      split: {
        orders: [
          order(1, 'completed', [
            { product_id: 'p1', category: 'hats' },
            { product_id: 'p2', category: 'shoes' },
          ]),
        ],
      },
    };
    expect(await select(p, { order: { product_id: 'p1', category: 'shoes' } })).toEqual(['same']);
    expect(await select(p, { order: { product_id: 'p1' } })).toEqual(['same', 'split']);
  });

  it('sum a window from the profile row when its orders lie all inside or outside, probing only a straddler', async () => {
    const at = (total: number, days: number) => ({ ...order(total), occurred_at: ago(days) });
    const p = {
      inside: { orders: [at(60, 5), at(60, 20)] },
      outside: { orders: [at(60, 40), at(60, 50)] },
      straddling: { orders: [at(60, 5), at(60, 40)] },
      straddlingRich: { orders: [at(120, 5), at(60, 40)] },
    };
    expect(await select(p, { order: { within_days: 30 }, sum: { op: 'gte', value: 100 } })).toEqual([
      'inside',
      'straddlingRich',
    ]);
    expect(await select(p, { order: { within_days: 30 }, count: { op: 'eq', value: 1 } })).toEqual([
      'straddling',
      'straddlingRich',
    ]);
  });

  it('probe a profile whose row has no order times, rather than trust the row', async () => {
    const r = parseSegmentQuery({ order: { within_days: 30 }, sum: { op: 'gte', value: 100 } });
    if (!r.ok) throw new Error('query');
    await clearWorkspace(t.db, ws);
    const rich = blankProfile({ orders: [{ ...order(150), occurred_at: ago(5) }] });
    await loadProfiles(t.db, ws, [rich]);
    await t.db.query(
      'UPDATE profiles SET completed_first_at = NULL, completed_last_at = NULL WHERE id = $1',
      [rich.id],
    );
    expect(await selectMatching(t.db, ws, r.query, { now: NOW, segments: new Map() })).toEqual([rich.id]);
  });
});
