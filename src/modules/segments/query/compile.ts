import { COMPARISON, fieldSql, jsonSql, type Param } from './operator-sql';
import { parseIsoTime, splitPath } from './parse-values';
import { manyRowsPerEvent, needsRow, pathsParam, probeSql, rowSql } from './property-sql';
import { expandSegments } from './references';
import type { AggregateTest, EventCondition, OrderCondition, SegmentQuery, Window } from './types';

/**
 * The segment compiler: a validated query → a boolean SQL expression over the profile row `p`,
 * with every value a $n parameter. Referenced segments are inlined first (references.ts), so the
 * SQL is self-contained and `calculate` is exact. Pure: the clock comes in as ctx.now.
 */
export interface CompileContext {
  /** "within_days" windows are measured back from this instant. */
  now: Date;
  /** Saved segments that may be referenced (transitively). */
  segments: ReadonlyMap<string, SegmentQuery>;
  /** The first free $n placeholder number. */
  firstParam: number;
  /**
   * How count and sum tests are written (the answer is the same; the plan is not):
   * - `correlated` (default): a scalar sub-query per profile, an index probe each. Best when the
   *   statement looks at a few profiles (a refresh of dirty ones, a slice).
   * - `set`: event counts become one grouped pass over the window's rows, joined to the profiles.
   *   Best over a whole workspace: 1M profiles × 20M events, a 30-day count took 11.9 s probed and
   *   1.1 s as a set. Orders stay probed: a profile has a handful, and grouping a year of them cost
   *   11.7 s where probing took 4.0 s (docs/decisions.md, "Segments"); with the covering index of
   *   migration 0019 both got faster and the order held (4.5 s grouped, 2.1 s probed: the grouped
   *   set is rebuilt by every parallel worker; docs/segments.md, "How long it takes"). Completed
   *   orders are mostly answered from the profile row instead (completedOrdersSql).
   */
  strategy?: 'correlated' | 'set';
}

export interface CompiledSegment {
  sql: string;
  params: unknown[];
}

const DAY_MS = 86_400_000;

/**
 * The caller wraps the expression:
 *   SELECT p.id FROM profiles p WHERE p.workspace_id = $1 AND p.merged_into IS NULL AND (<sql>)
 * Throws a SegmentExpandError (references.ts) for an unknown or cyclic reference or an oversized
 * expansion.
 */
export function compileSegment(query: SegmentQuery, ctx: CompileContext): CompiledSegment {
  const expanded = expandSegments(query, ctx.segments);
  const params: unknown[] = [];
  const p: Param = (value) => {
    params.push(value);
    return `$${ctx.firstParam + params.length - 1}`;
  };
  return { sql: compileNode(expanded, { p, now: ctx.now, set: ctx.strategy === 'set' }), params };
}

interface Emit {
  p: Param;
  now: Date;
  set: boolean;
}

function compileNode(q: SegmentQuery, e: Emit): string {
  if ('and' in q) return `(${q.and.map((c) => compileNode(c, e)).join(' AND ')})`;
  if ('or' in q) return `(${q.or.map((c) => compileNode(c, e)).join(' OR ')})`;
  if ('not' in q) return `(NOT ${compileNode(q.not, e)})`;
  if ('field' in q) return fieldSql(q, e.p);
  if ('attribute' in q)
    return jsonSql(`(p.attributes #> ${e.p(splitPath(q.attribute))}::text[])`, q.op, q.value, e.p);
  if ('event' in q) return eventSql(q, e);
  if ('order' in q) return orderSql(q, e);
  // expandSegments left no references; reaching this is a bug, not a bad query.
  throw new Error(`segment reference ${q.segment} survived inlining`);
}

function eventSql(c: EventCondition, { p, now, set }: Emit): string {
  const f = c.event;
  const pass = propertyPass(f, p, now);
  if (pass !== undefined) {
    // One form's rows serve both: per profile through event_properties_profile_idx, or as one
    // grouped pass through event_properties_name_path_idx. "At least once" and "never" take the
    // grouped pass too: probing each window event from the profiles' side (a semi-join) is what
    // the pass avoids.
    const rows = {
      table: 'event_properties',
      alias: 'w0',
      where: pass.where,
      aggregate: pass.aggregate,
    } as const;
    if (!set) return aggregateSql({ ...rows, test: c.count, p, set });
    return aggregateSql({ ...rows, test: c.count ?? { op: 'gte', value: 1 }, p, set, grouped: pass });
  }
  const where: string[] = [];
  if (f.type !== undefined) where.push(`e.event_type = ${p(f.type)}::text`);
  if (f.name !== undefined) where.push(`e.event_name = ${p(f.name)}::text`);
  where.push(...windowSql('e.occurred_at', f, p, now));
  // Without a name, or with only not_exists tests: the rows come from event_profiles (migration
  // 0026) and each payload test probes the event's typed property rows (migration 0029,
  // property-sql.ts), never the payload itself.
  for (const w of f.where ?? []) where.push(probeSql(w, 'e', p));
  return aggregateSql({
    table: 'event_profiles',
    alias: 'e',
    where,
    aggregate: 'count(*)',
    test: c.count,
    p,
    set,
  });
}

/**
 * The rows of an event count with a `where`, read from one tested path's rows of the named event
 * in the window instead of every event of the name: the first test that needs a row drives (its
 * rows are index-only in both indexes of event_properties), the other tests probe the same event's
 * rows. Without a name, or with only not_exists tests: undefined (event_profiles drives).
 */
function propertyPass(f: EventCondition['event'], p: Param, now: Date): Grouped | undefined {
  const filters = f.where ?? [];
  const driver = filters.find(needsRow);
  if (f.name === undefined || driver === undefined) return undefined;
  const where = [
    `w0.event_name = ${p(f.name)}::text`,
    `w0.path = ANY(${pathsParam(driver, p)})`,
    ...windowSql('w0.occurred_at', f, p, now),
  ];
  if (f.type !== undefined) where.push(`w0.event_type = ${p(f.type)}::text`);
  where.push(rowSql(driver, 'w0', p));
  for (const w of filters) if (w !== driver) where.push(probeSql(w, 'w0', p));
  // Elements of one array are rows of one event: count the event once.
  const aggregate = manyRowsPerEvent(driver) ? 'count(DISTINCT w0.seq)' : 'count(*)';
  return { from: 'event_properties w0', alias: 'w0', where, aggregate };
}

function orderSql(c: OrderCondition, { p, now }: Emit): string {
  const f = c.order;
  const statuses = f.status === undefined ? ['completed'] : Array.isArray(f.status) ? f.status : [f.status];
  const plain = f.currency === undefined && f.product_id === undefined && f.category === undefined;
  if (plain && statuses.length === 1 && statuses[0] === 'completed') return completedOrdersSql(c, p, now);
  const where: string[] = [];
  where.push(`o.status = ANY(${p(statuses)}::text[])`);
  where.push(...windowSql('o.occurred_at', f, p, now));
  if (f.currency !== undefined) where.push(`o.currency = ${p(f.currency)}::text`);
  if (f.product_id !== undefined || f.category !== undefined) {
    // One item must match every item filter given (containment of a one-element array).
    const item = { product_id: f.product_id, category: f.category };
    where.push(`o.items @> ${p(JSON.stringify([item]))}::jsonb`);
  }
  const rows = { table: 'orders', alias: 'o', where, p, set: false } as const;
  if (c.sum !== undefined)
    return aggregateSql({ ...rows, aggregate: 'COALESCE(sum(o.total), 0)', test: c.sum });
  return aggregateSql({ ...rows, aggregate: 'count(*)', test: c.count });
}

/**
 * Completed orders without a currency or item filter (the common case: "spent 200 in the last 365
 * days", "3 orders this year"), read from the profile's own row where that row answers: its
 * total_spend, completed_orders and first/last completed order times (migration 0021, kept by
 * commerce with every order change). A profile with no completed order in the window's reach, or
 * whose completed orders all lie inside the window, needs no probe; only one whose orders straddle
 * an edge of the window is probed, through segment_completed_orders: a function declared PARALLEL
 * SAFE, so PostgreSQL still scans the profiles in parallel (a correlated sub-query would pin the
 * scan to one process). On 1M profiles, 2M orders: 1.9 s → 0.28 s (docs/segments.md).
 */
function completedOrdersSql(c: OrderCondition, p: Param, now: Date): string {
  const sum = c.sum !== undefined;
  const t: AggregateTest = (sum ? c.sum : c.count) ?? { op: 'gte', value: 1 };
  const cast = sum ? 'numeric' : 'int8';
  const own = sum ? 'p.total_spend' : 'p.completed_orders';
  const { since, until } = windowBounds(c.order, now);
  if (since === null && until === null) return `(${testSql(t, cast, p)(own)})`;
  const at = (ms: number | null) => (ms === null ? 'NULL' : `${p(new Date(ms).toISOString())}`);
  const [s, u] = [at(since), at(until)];
  const holds = testSql(t, cast, p); // one bound, tested against the row and the probe alike
  const none = ['p.completed_orders = 0'];
  const all: string[] = [];
  if (since !== null) {
    none.push(`p.completed_last_at < ${s}::timestamptz`);
    all.push(`p.completed_first_at >= ${s}::timestamptz`);
  }
  if (until !== null) {
    none.push(`p.completed_first_at >= ${u}::timestamptz`);
    all.push(`p.completed_last_at < ${u}::timestamptz`);
  }
  const probe = `segment_completed_orders(p.workspace_id, p.id, ${s}::timestamptz, ${u}::timestamptz, '${sum ? 'sum' : 'count'}')`;
  return `(CASE WHEN ${none.join(' OR ')} THEN ${passes(t, 0)} WHEN ${all.join(' AND ')} THEN ${holds(own)} ELSE ${holds(probe)} END)`;
}

/** A window as one range [since, until) in epoch ms (null: open), the latest lower bound winning. */
function windowBounds(w: Window, now: Date): { since: number | null; until: number | null } {
  const lows: number[] = [];
  if (w.within_days !== undefined) lows.push(now.getTime() - w.within_days * DAY_MS);
  if (w.from !== undefined) lows.push(parseIsoTime(w.from)!);
  return {
    since: lows.length > 0 ? Math.max(...lows) : null,
    until: w.to === undefined ? null : parseIsoTime(w.to)!,
  };
}

/** `within_days` counts back from now (inclusive); `from` is inclusive and `to` exclusive. */
function windowSql(col: string, w: Window, p: Param, now: Date): string[] {
  const out: string[] = [];
  const at = (ms: number) => `${p(new Date(ms).toISOString())}::timestamptz`;
  if (w.within_days !== undefined) out.push(`${col} >= ${at(now.getTime() - w.within_days * DAY_MS)}`);
  if (w.from !== undefined) out.push(`${col} >= ${at(parseIsoTime(w.from)!)}`);
  if (w.to !== undefined) out.push(`${col} < ${at(parseIsoTime(w.to)!)}`);
  return out;
}

interface Aggregate {
  table: 'event_profiles' | 'event_properties' | 'orders';
  alias: 'e' | 'w0' | 'o';
  /** The row filters, without the correlation to the profile. */
  where: string[];
  aggregate: RowAggregate;
  test: AggregateTest | undefined;
  p: Param;
  set: boolean;
  /** The set form's rows when they come from elsewhere than `table` (property-sql.ts). */
  grouped?: Grouped | undefined;
}

type RowAggregate = 'count(*)' | 'count(DISTINCT w0.seq)' | 'COALESCE(sum(o.total), 0)';

/** The rows of a grouped pass: FROM item, its alias (with workspace_id and profile_id), filters. */
interface Grouped {
  from: string;
  alias: string;
  where: string[];
  aggregate: RowAggregate;
}

/**
 * A count or sum over a profile's rows. "At least one" and "none" become EXISTS / NOT EXISTS, which
 * stop at the first row, and which the planner already turns into a semi- or anti-join when that
 * is cheaper: they need no `set` form.
 */
function aggregateSql({ table, alias: a, where, aggregate, test, p, set, grouped }: Aggregate): string {
  const correlated = [`${a}.workspace_id = p.workspace_id`, `${a}.profile_id = p.id`, ...where];
  const body = `FROM ${table} ${a} WHERE ${correlated.join(' AND ')}`;
  const counts = aggregate !== 'COALESCE(sum(o.total), 0)';
  if (counts && grouped === undefined) {
    const form = existsForm(test);
    if (form === 'exists') return `EXISTS (SELECT 1 ${body})`;
    if (form === 'not_exists') return `(NOT EXISTS (SELECT 1 ${body}))`;
  }
  const t = test!;
  const holds = testSql(t, counts ? 'int8' : 'numeric', p);
  if (!set) return `(${holds(`(SELECT ${aggregate} ${body})`)})`;
  // One grouped pass: the profiles whose rows pass the test. A profile with no rows has no group,
  // so when an empty history passes the test (count < 3, sum ≤ 100), the grouped pass lists the
  // profiles that fail it instead, and the condition is its negation.
  const zeroPasses = passes(t, 0);
  // Every row of event_profiles has a profile, so the window is read from
  // event_profiles_name_time_idx alone (it carries event_type and profile_id; migration 0026);
  // a `where` reads event_properties_name_path_idx alone (migration 0029).
  const g = grouped ?? { from: `${table} ${a}`, alias: a, where, aggregate };
  const having = zeroPasses ? `NOT (${holds(g.aggregate)})` : holds(g.aggregate);
  const filter = g.where.length > 0 ? `WHERE ${g.where.join(' AND ')} ` : '';
  const groups = `SELECT ${g.alias}.workspace_id, ${g.alias}.profile_id FROM ${g.from} ${filter}GROUP BY 1, 2 HAVING ${having}`;
  const member = `EXISTS (SELECT 1 FROM (${groups}) g WHERE g.workspace_id = p.workspace_id AND g.profile_id = p.id)`;
  return zeroPasses ? `(NOT ${member})` : member;
}

/** A count test that is "at least one" or "none", written as EXISTS / NOT EXISTS. */
function existsForm(test: AggregateTest | undefined): 'exists' | 'not_exists' | null {
  const { op, value } = test ?? { op: 'gte', value: 1 };
  if ((op === 'gte' && value === 1) || (op === 'gt' && value === 0) || (op === 'neq' && value === 0))
    return 'exists';
  if ((op === 'eq' && value === 0) || (op === 'lt' && value === 1) || (op === 'lte' && value === 0))
    return 'not_exists';
  return null;
}

/**
 * The test as SQL over an expression `x`, its bounds parameters of the aggregate's type, bound once
 * however many expressions it is applied to (the summary form tests the row and the probe).
 */
function testSql(t: AggregateTest, cast: 'int8' | 'numeric', p: Param): (x: string) => string {
  const v = (x: number) => `${p(String(x))}::${cast}`;
  if (t.op === 'between') {
    const [lo, hi] = (t.value as [number, number]).map(v);
    return (x) => `${x} BETWEEN ${lo} AND ${hi}`;
  }
  const bound = v(t.value as number);
  return (x) => `${x} ${COMPARISON[t.op]} ${bound}`;
}

/** Whether an aggregate of `x` passes the test (the evaluator's rule, for the empty history). */
function passes(t: AggregateTest, x: number): boolean {
  if (t.op === 'between') {
    const [lo, hi] = t.value as [number, number];
    return x >= lo && x <= hi;
  }
  const v = t.value as number;
  return { eq: x === v, neq: x !== v, gt: x > v, gte: x >= v, lt: x < v, lte: x <= v }[t.op];
}
