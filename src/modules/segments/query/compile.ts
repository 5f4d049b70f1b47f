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
   * - `correlated` (default): a sub-query per profile, one index descent to that profile's rows
   *   (perProfileSql), whatever the statistics say. Best when the statement looks at a few profiles
   *   (a refresh of dirty ones, a slice), and the one form whose cost follows the profiles looked at.
   * - `set`: every event count becomes one grouped pass over the window's rows, joined to the
   *   profiles (groupedSql).
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
  /**
   * What the expression needs after `FROM profiles p`: with strategy `set`, one `LEFT JOIN` per
   * grouped pass (groupedSql); empty otherwise.
   */
  joins: string;
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
  const joins: string[] = [];
  const sql = compileNode(expanded, { p, now: ctx.now, set: ctx.strategy === 'set' ? joins : null });
  return { sql, params, joins: joins.join(' ') };
}

interface Emit {
  p: Param;
  now: Date;
  /** Strategy `set`: the joins of the grouped passes written so far; null per profile. */
  set: string[] | null;
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
  // Over a whole workspace every event count is one grouped pass over the window's rows, joined to
  // the profiles, "at least once" and "never" too: as an EXISTS over each profile's events, a semi-
  // or anti-join whose plan followed the statistics, with none it re-read the window per profile.
  if (set) {
    const rows = propertyRows(f, p, now) ?? eventRows(f, p, now, true);
    return groupedSql(rows, c.count ?? { op: 'gte', value: 1 }, p, set);
  }
  return perProfileSql(eventRows(f, p, now, false), c.count, p);
}

/**
 * The rows of a grouped pass with a `where`, read from one tested path's rows of the named event
 * in the window (event_properties_name_path_idx, index-only) instead of every event of the name:
 * the first test that needs a row drives, the other tests probe the same event's rows. Without a
 * name, or with only not_exists tests: undefined (event_profiles drives).
 */
function propertyRows(f: EventCondition['event'], p: Param, now: Date): Rows | undefined {
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
  return { table: 'event_properties', alias: 'w0', where, aggregate };
}

/**
 * The events an event condition counts, from event_profiles (migration 0026), each payload test a
 * probe of that event's typed property rows (migration 0029, property-sql.ts), never the payload.
 *
 * Per profile (`set` false) the name is written `(… = …) IS TRUE`, which no index can take as a
 * condition. Otherwise the profile's index (event_profiles_profile_idx: workspace, profile, time)
 * and the name's (event_profiles_name_time_idx: workspace, name, time) both match, and wherever the
 * estimates fall to one row (no statistics, a workspace or a name that appeared after the last
 * ANALYZE) the two cost the same and the planner took the name's: each profile's probe read the whole
 * workspace's events of that name (docs/decisions.md, "Segment plans that cannot explode"). The
 * profile's index carries the name, so the test costs no read. The window stays a condition: the
 * profile's index matches it after the profile, and the name's only by skipping over every name
 * (PostgreSQL 18), never more cheaply. Over a whole workspace (`set`) the name's index is the one
 * wanted.
 */
function eventRows(f: EventCondition['event'], p: Param, now: Date, set: boolean): Rows {
  const where: string[] = [];
  if (f.type !== undefined) where.push(`e.event_type = ${p(f.type)}::text`);
  if (f.name !== undefined) where.push(indexable(`e.event_name = ${p(f.name)}::text`, set));
  where.push(...windowSql('e.occurred_at', f, p, now));
  for (const w of f.where ?? []) where.push(probeSql(w, 'e', p));
  return { table: 'event_profiles', alias: 'e', where, aggregate: 'count(*)' };
}

/** A test as written (`yes`), or as one that no index can take as a condition (a filter). */
const indexable = (test: string, yes: boolean): string => (yes ? test : `(${test}) IS TRUE`);

function orderSql(c: OrderCondition, { p, now }: Emit): string {
  const f = c.order;
  const statuses = f.status === undefined ? ['completed'] : Array.isArray(f.status) ? f.status : [f.status];
  const plain = f.currency === undefined && f.product_id === undefined && f.category === undefined;
  if (plain && statuses.length === 1 && statuses[0] === 'completed') return completedOrdersSql(c, p, now);
  const where: string[] = [];
  where.push(`o.status = ANY(${p(statuses)}::text[])`);
  // The profile is the only index condition (as for events: eventRows): orders_list_idx leads with
  // the workspace and the time, and would tie with the profile's index where estimates fall to one row.
  for (const w of windowSql('o.occurred_at', f, p, now)) where.push(indexable(w, false));
  if (f.currency !== undefined) where.push(`o.currency = ${p(f.currency)}::text`);
  if (f.product_id !== undefined || f.category !== undefined) {
    // One item must match every item filter given (containment of a one-element array).
    const item = { product_id: f.product_id, category: f.category };
    where.push(`o.items @> ${p(JSON.stringify([item]))}::jsonb`);
  }
  // Probed per profile on both strategies: a profile has a handful of orders (see `strategy`).
  if (c.sum !== undefined)
    return perProfileSql(
      { table: 'orders', alias: 'o', where, aggregate: 'COALESCE(sum(o.total), 0)' },
      c.sum,
      p,
    );
  return perProfileSql({ table: 'orders', alias: 'o', where, aggregate: 'count(*)' }, c.count, p);
}

/**
 * Completed orders without a currency or item filter (the common case: "spent 200 in the last 365
 * days", "3 orders this year"), read from the profile's own row where that row answers: its
 * total_spend, completed_orders and first/last completed order times (migration 0021, kept by
 * commerce with every order change). A profile with no completed order in the window's reach, or
 * whose completed orders all lie inside the window, needs no probe; only one whose orders straddle
 * an edge of the window probes its orders, one descent of orders_profile_idx with the profile as
 * its only index condition (as perProfileSql). On 1M profiles, 2M orders: 1.9 s → 0.28 s
 * (docs/segments.md).
 */
function completedOrdersSql(c: OrderCondition, p: Param, now: Date): string {
  const sum = c.sum !== undefined;
  const t: AggregateTest = (sum ? c.sum : c.count) ?? { op: 'gte', value: 1 };
  const cast = sum ? 'numeric' : 'int8';
  const own = sum ? 'p.total_spend' : 'p.completed_orders';
  const { since, until } = windowBounds(c.order, now);
  if (since === null && until === null) return `(${testSql(t, cast, p)(own)})`;
  const holds = testSql(t, cast, p); // one bound, tested against the row and the probe alike
  const none = ['p.completed_orders = 0'];
  const all: string[] = [];
  const rows = ['o.workspace_id = p.workspace_id', 'o.profile_id = p.id', "o.status = 'completed'"];
  if (since !== null) {
    const s = `${p(new Date(since).toISOString())}::timestamptz`;
    none.push(`p.completed_last_at < ${s}`);
    all.push(`p.completed_first_at >= ${s}`);
    rows.push(indexable(`o.occurred_at >= ${s}`, false));
  }
  if (until !== null) {
    const u = `${p(new Date(until).toISOString())}::timestamptz`;
    none.push(`p.completed_first_at >= ${u}`);
    all.push(`p.completed_last_at < ${u}`);
    rows.push(indexable(`o.occurred_at < ${u}`, false));
  }
  const probe = `(SELECT ${holds(sum ? 'COALESCE(sum(o.total), 0)' : 'count(*)')} FROM orders o WHERE ${rows.join(' AND ')})`;
  return `(CASE WHEN ${none.join(' OR ')} THEN ${passes(t, 0)} WHEN ${all.join(' AND ')} THEN ${holds(own)} ELSE ${probe} END)`;
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

/** The rows a count or sum looks at: a table (with workspace_id and profile_id), its filters. */
interface Rows {
  table: 'event_profiles' | 'event_properties' | 'orders';
  alias: 'e' | 'w0' | 'o';
  /** The row filters, without the correlation to the profile. */
  where: string[];
  aggregate: RowAggregate;
}

type RowAggregate = 'count(*)' | 'count(DISTINCT w0.seq)' | 'COALESCE(sum(o.total), 0)';

/**
 * A count or sum over one profile's rows, as a sub-query the planner must run once per profile
 * with the profile as an index key: every one of these tables has an index led by (workspace_id,
 * profile_id), so each run is one descent to that profile's rows, whatever the statistics say.
 * "At least one" and "none" are EXISTS / NOT EXISTS, which stop at the first row. `OFFSET 0` keeps
 * each EXISTS a sub-plan of its own: without it PostgreSQL turns one in a WHERE into a semi- or
 * anti-join, or one elsewhere into a hash of all the workspace's rows, and with no statistics (every
 * estimate then one row) it chose a nested loop that read the whole workspace's rows for each
 * profile (docs/decisions.md, "Segment plans that cannot explode"). A count or sum test is written
 * inside its sub-query, so the aggregate is computed once even for `between`.
 */
function perProfileSql(
  { table, alias: a, where, aggregate }: Rows,
  test: AggregateTest | undefined,
  p: Param,
) {
  const filters = [`${a}.workspace_id = p.workspace_id`, `${a}.profile_id = p.id`, ...where];
  const body = `FROM ${table} ${a} WHERE ${filters.join(' AND ')}`;
  const counts = aggregate !== 'COALESCE(sum(o.total), 0)';
  if (counts) {
    const form = existsForm(test);
    if (form === 'exists') return `EXISTS (SELECT 1 ${body} OFFSET 0)`;
    if (form === 'not_exists') return `(NOT EXISTS (SELECT 1 ${body} OFFSET 0))`;
  }
  return `(SELECT ${testSql(test!, counts ? 'int8' : 'numeric', p)(aggregate)} ${body})`;
}

/**
 * A count over a whole workspace (strategy `set`): one grouped pass over the rows, the profiles
 * whose rows pass the test, left-joined to the profiles; the condition is whether the profile has a
 * group. A profile with no rows has no group, so when an empty history passes the test (count < 3,
 * eq 0), the grouped pass lists the profiles that fail it instead, and the condition is that the
 * profile has none. Every row of event_profiles has a profile, so the window is read from
 * event_profiles_name_time_idx alone (it carries event_type and profile_id; migration 0026); a
 * `where` reads event_properties_name_path_idx alone (migration 0029).
 *
 * A join rather than an EXISTS in the expression: an EXISTS under `or` or `not` stays a sub-plan
 * that PostgreSQL may run once per profile, re-reading the whole pass each time, and did wherever
 * estimates fell to one row (docs/decisions.md, "Segment plans that cannot explode"). A join is read
 * once, and countMatching runs these statements with nested loops off, so each is hashed.
 */
function groupedSql(
  { table, alias: a, where, aggregate }: Rows,
  t: AggregateTest,
  p: Param,
  joins: string[],
) {
  const holds = testSql(t, 'int8', p);
  const zeroPasses = passes(t, 0);
  const having = zeroPasses ? `NOT (${holds(aggregate)})` : holds(aggregate);
  const filter = where.length > 0 ? `WHERE ${where.join(' AND ')} ` : '';
  const g = `g${joins.length + 1}`;
  joins.push(
    `LEFT JOIN (SELECT ${a}.workspace_id, ${a}.profile_id FROM ${table} ${a} ${filter}GROUP BY 1, 2 HAVING ${having}) ${g}` +
      ` ON ${g}.workspace_id = p.workspace_id AND ${g}.profile_id = p.id`,
  );
  return `(${g}.profile_id IS ${zeroPasses ? '' : 'NOT '}NULL)`;
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
