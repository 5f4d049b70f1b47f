import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDb, type TestDb } from '../../platform/jobs/jobs.test-kit';
import {
  countStatement,
  type EvalContext,
  manyStatement,
  matchingStatement,
  pageStatement,
  queryWorkspace,
} from './evaluate';
import * as arb from './query/arbitraries.test-kit';
import { parseSegmentQuery } from './query/parse';
import { createWorkspaceRow, DAY, loadProfiles, NOW } from './query/query.test-kit';
import { OPERATORS, type SegmentQuery } from './query/types';

/**
 * The plans of the statements a calculation and a refresh run, on the engine under test, read with
 * EXPLAIN (FORMAT JSON) under three states of the planner's statistics: none (PGlite never analyses;
 * a PostgreSQL without autovacuum), fresh, and stale (analysed before this workspace, its event names,
 * paths and times existed, when the tables held one event name). Where estimates fall to one row the
 * planner cannot tell a read of one profile's rows from a read of the whole workspace's, so the
 * compiled shapes leave it no choice (docs/decisions.md, "Segment plans that cannot explode"):
 *
 * - per profile (a slice, a refresh, a page walked in `seq` order), every read of event_profiles,
 *   event_properties and orders is an index descent keyed by the profile (`profile_id = …`) or by
 *   one event (`seq = …`): no sequential scan, no index scan led by anything else;
 * - over a whole workspace (PostgreSQL's count, strategy `set`), a read not keyed that way runs at
 *   most once per statement (EXPLAIN ANALYZE's loops), never once per profile.
 */
const TABLES = ['event_profiles', 'event_properties', 'orders'];
const ctx: EvalContext = { now: NOW, segments: new Map() };

const from = new Date(NOW.getTime() - 30 * DAY).toISOString();
const to = new Date(NOW.getTime() - 5 * DAY).toISOString();
const VALUES: Record<string, unknown> = {
  eq: 'pro',
  neq: 'pro',
  gt: 1,
  gte: '10',
  lt: 100,
  lte: 'pro',
  between: [1, 10],
  in: ['pro', 1, true],
  not_in: ['pro'],
  contains: 'ann',
  starts_with: 'pr',
};
const test = (property: string, op: string) =>
  op === 'exists' || op === 'not_exists' ? { property, op } : { property, op, value: VALUES[op] };

/** Every compiled shape, by name: event counts with and without names, windows and payload tests,
 * each operator as the first test and as a second one, array-index paths, every form of order
 * condition, and the combinators around them. */
const SHAPES: Record<string, unknown> = {
  'any event': { event: {} },
  'an event type': { event: { type: 'page' } },
  'an event name': { event: { name: 'Product Viewed' } },
  'an event name never': { event: { name: 'Product Viewed' }, count: { op: 'eq', value: 0 } },
  'an event name twice in 7 days': {
    event: { name: 'Product Viewed', within_days: 7 },
    count: { op: 'gte', value: 2 },
  },
  'a window without a name, between 1 and 3 times': {
    event: { from, to },
    count: { op: 'between', value: [1, 3] },
  },
  'fewer than 3 of a name (an empty history passes)': {
    event: { name: 'Checkout', type: 'track' },
    count: { op: 'lt', value: 3 },
  },
  ...Object.fromEntries(
    OPERATORS.map((op) => [
      `a property test (${op})`,
      { event: { name: 'Product Viewed', within_days: 30, where: [test('cart.total', op)] } },
    ]),
  ),
  ...Object.fromEntries(
    OPERATORS.map((op) => [
      `a second property test (${op})`,
      {
        event: { name: 'Signed Up', where: [test('cart.items', 'exists'), test('plan.tier', op)] },
        count: { op: 'gte', value: 2 },
      },
    ]),
  ),
  'only not_exists, twice or more': {
    event: { name: 'Product Viewed', where: [test('price', 'not_exists')] },
    count: { op: 'gte', value: 2 },
  },
  'a property test without a name': { event: { type: 'track', where: [test('plan', 'eq')] } },
  'array-index paths': {
    event: {
      name: 'Checkout',
      where: [
        { property: 'cart.items.1.sku', op: 'neq', value: 'ann' },
        { property: 'tags.2.0', op: 'not_exists' },
      ],
    },
  },
  'contains in an array, never': {
    event: { name: 'Product Viewed', where: [{ property: 'tags', op: 'contains', value: 10 }] },
    count: { op: 'eq', value: 0 },
  },
  'completed orders, all time (the profile row)': { order: {}, count: { op: 'gte', value: 2 } },
  'completed orders in a window (a probe at its edge)': {
    order: { within_days: 30 },
    sum: { op: 'gte', value: 100 },
  },
  'orders of a status, currency and product': {
    order: { status: ['pending', 'refunded'], currency: 'EUR', product_id: 'p1', within_days: 30 },
    count: { op: 'between', value: [1, 2] },
  },
  'orders of a category, any at all': { order: { category: 'hats', status: 'cancelled' } },
  'and, or, not around them': {
    or: [
      {
        and: [
          { attribute: 'plan', op: 'eq', value: 'pro' },
          { event: { name: 'Checkout', within_days: 30 } },
        ],
      },
      { not: { event: { name: 'Signed Up', where: [test('cart.paid', 'eq')] } } },
      { order: { currency: 'USD' }, sum: { op: 'lt', value: 50 } },
    ],
  },
};

function parsed(q: unknown): SegmentQuery {
  const r = parseSegmentQuery(q);
  if (!r.ok) throw new Error(`invalid query ${JSON.stringify(q)}: ${JSON.stringify(r.errors)}`);
  return r.query;
}

/** A few random queries of the property tests' pools too, for shapes this list forgot. */
const RANDOM = fc.sample(fc.oneof(arb.query(), arb.propertyQuery), { numRuns: 40, seed: 23 });

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Index Cond'?: string;
  'Actual Loops'?: number;
  Plans?: PlanNode[];
}

const nodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(nodes)];
const describeNode = (n: PlanNode) =>
  `${n['Node Type']} ${n['Index Name'] ?? n['Relation Name'] ?? ''} ${n['Index Cond'] ?? ''} loops=${n['Actual Loops'] ?? '?'}`;

/** A state of the statistics and the database it describes. */
interface State {
  name: string;
  t: TestDb;
  ws: string;
  /** Every index of TABLES. */
  indexes: Set<string>;
}

/** The reads of TABLES in a plan that are not keyed by a profile or by one event. */
function unkeyedReads(plan: PlanNode, indexes: Set<string>): PlanNode[] {
  return nodes(plan).filter((n) => {
    if (n['Node Type'] === 'Seq Scan') return TABLES.includes(n['Relation Name'] ?? '');
    if (n['Index Name'] === undefined || !indexes.has(n['Index Name'])) return false;
    return !/\b(profile_id|seq) = /.test(n['Index Cond'] ?? '');
  });
}

type Explained = { 'QUERY PLAN': Array<{ Plan: PlanNode }> };

/** The plan of a per-profile statement, as the service runs it. */
async function explain(s: State, stmt: { sql: string; params: unknown[] }) {
  const { rows } = await s.t.db.query<Explained>(`EXPLAIN (FORMAT JSON) ${stmt.sql}`, stmt.params);
  return rows[0]!['QUERY PLAN'][0]!.Plan;
}

/** The plan of a statement over a whole workspace, run as countMatching runs it, with its loops. */
async function explainWorkspace(s: State, stmt: { sql: string; params: unknown[] }) {
  const sql = `EXPLAIN (FORMAT JSON, ANALYZE) ${stmt.sql}`;
  const rows = await s.t.db.transaction((tx) => queryWorkspace<Explained>(tx, { sql, params: stmt.params }));
  return rows[0]!['QUERY PLAN'][0]!.Plan;
}

/** The people under test and, in another workspace, the older, one-name history of the stale state. */
const people = fc.sample(arb.profile, { numRuns: 400, seed: 5 });
const oldPeople = fc.sample(arb.profile, { numRuns: 400, seed: 6 }).map((p) => ({
  ...p,
  id: crypto.randomUUID(),
  events: p.events.map((e) => ({
    ...e,
    name: 'Old',
    occurred_at: new Date(e.occurred_at.getTime() - 300 * DAY),
  })),
  orders: [],
  total_spend: 0,
}));

/** This schema's tables only: a bare ANALYZE would read every schema of a shared test server. */
const ANALYZE = 'ANALYZE profiles, events, event_profiles, event_properties, orders';

async function openState(name: 'none' | 'fresh' | 'stale'): Promise<State> {
  const t = await openTestDb();
  const ws = await createWorkspaceRow(t.db);
  if (name === 'stale') {
    await loadProfiles(t.db, await createWorkspaceRow(t.db), oldPeople);
    await t.db.query(ANALYZE);
  }
  await loadProfiles(t.db, ws, people);
  if (name === 'fresh') await t.db.query(ANALYZE);
  const { rows } = await t.db.query<{ indexname: string }>(
    'SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = ANY($1::text[])',
    [TABLES],
  );
  return { name, t, ws, indexes: new Set(rows.map((r) => r.indexname)) };
}

describe.each(['none', 'fresh', 'stale'] as const)('with %s statistics', (stateName) => {
  let s: State;
  let slice: { after: number; upTo: number };
  let ids: string[];
  beforeAll(async () => {
    s = await openState(stateName);
    const { rows } = await s.t.db.query<{ seq: number; id: string }>(
      'SELECT seq, id FROM profiles WHERE workspace_id = $1 ORDER BY seq',
      [s.ws],
    );
    slice = { after: Number(rows[99]!.seq), upTo: Number(rows[199]!.seq) };
    ids = rows.slice(0, 50).map((r) => r.id);
  }, 120_000);
  afterAll(() => s?.t.close());

  const cases = [
    ...Object.entries(SHAPES),
    ...RANDOM.map((q, i) => [`random query ${i}`, q] as [string, unknown]),
  ];

  it('reads each profile of a slice, a refresh and a page by index, never a whole workspace', async () => {
    const found: string[] = [];
    for (const [name, q] of cases) {
      const query = parsed(q);
      const statements = {
        slice: matchingStatement(s.ws, query, ctx, slice),
        refresh: manyStatement(s.ws, [{ query }, { query: { not: query } }], ctx, { ids }),
        page: pageStatement(s.ws, query, { ...ctx, strategy: 'correlated' }, { after: 0, limit: 51 }),
      };
      for (const [kind, stmt] of Object.entries(statements)) {
        for (const n of unkeyedReads(await explain(s, stmt), s.indexes))
          found.push(`${name} (${kind}): ${describeNode(n)}`);
      }
    }
    expect(found).toEqual([]);
  }, 120_000);

  it('reads a whole workspace at most once per statement when it counts it as a set', async () => {
    const found: string[] = [];
    for (const [name, q] of cases) {
      const query = parsed(q);
      const statements = {
        count: countStatement(s.ws, query, ctx),
        'rare page': pageStatement(s.ws, query, { ...ctx, strategy: 'set' }, { after: 0, limit: 51 }),
      };
      for (const [kind, stmt] of Object.entries(statements)) {
        const plan = await explainWorkspace(s, stmt);
        for (const n of unkeyedReads(plan, s.indexes))
          if ((n['Actual Loops'] ?? 0) > 1) found.push(`${name} (${kind}): ${describeNode(n)}`);
      }
    }
    expect(found).toEqual([]);
  }, 300_000);
});
