import { compareScalars, parseIsoTime, splitPath } from './parse-values';
import { expandSegments } from './references';
import {
  type AggregateTest,
  type EventCondition,
  type FieldCondition,
  type Operator,
  type OrderCondition,
  PROFILE_FIELD_KINDS,
  type Scalar,
  type SegmentQuery,
  type TestValue,
  type Window,
} from './types';

/**
 * The reference semantics of the query language, in plain JavaScript over one profile. The
 * property test holds the compiled SQL to it on both engines, and docs/segments.md describes it.
 */
export interface EvalEvent {
  type: string;
  name: string;
  payload: unknown;
  occurred_at: Date;
}

export interface EvalOrder {
  status: string;
  total: number;
  currency: string;
  items: unknown;
  occurred_at: Date;
}

export interface EvalProfile {
  id: string;
  email: string | null;
  first_name: string | null;
  last_name: string | null;
  rfm_segment: string | null;
  total_spend: number;
  predicted_clv: number | null;
  churn_risk_score: number | null;
  created_at: Date;
  updated_at: Date;
  attributes: unknown;
  events: readonly EvalEvent[];
  orders: readonly EvalOrder[];
}

export interface EvaluateContext {
  now: Date;
  segments: ReadonlyMap<string, SegmentQuery>;
}

const DAY_MS = 86_400_000;

export function evaluateSegment(query: SegmentQuery, profile: EvalProfile, ctx: EvaluateContext): boolean {
  return matches(expandSegments(query, ctx.segments), profile, ctx.now);
}

function matches(q: SegmentQuery, pr: EvalProfile, now: Date): boolean {
  if ('and' in q) return q.and.every((c) => matches(c, pr, now));
  if ('or' in q) return q.or.some((c) => matches(c, pr, now));
  if ('not' in q) return !matches(q.not, pr, now);
  if ('field' in q) return fieldMatches(q, pr);
  if ('attribute' in q) return jsonMatches(resolvePath(pr.attributes, q.attribute), q.op, q.value);
  if ('event' in q) return eventMatches(q, pr, now);
  if ('order' in q) return orderMatches(q, pr, now);
  throw new Error(`segment reference ${q.segment} survived inlining`);
}

/** Follows a dotted path like PostgreSQL's `#>`: keys in objects, plain numbers in arrays. */
export function resolvePath(root: unknown, path: string): unknown {
  let at: unknown = root;
  for (const seg of splitPath(path)) {
    if (Array.isArray(at)) at = /^(0|[1-9]\d*)$/.test(seg) ? at[Number(seg)] : undefined;
    else if (typeof at === 'object' && at !== null && Object.hasOwn(at, seg))
      at = (at as Record<string, unknown>)[seg];
    else return undefined;
  }
  return at;
}

const isScalar = (v: unknown): v is Scalar => ['string', 'number', 'boolean'].includes(typeof v);
const sameScalar = (a: unknown, b: Scalar) => typeof a === typeof b && a === b;

function compare(op: Operator, d: number): boolean {
  if (op === 'eq') return d === 0;
  if (op === 'neq') return d !== 0;
  if (op === 'gt') return d > 0;
  if (op === 'gte') return d >= 0;
  if (op === 'lt') return d < 0;
  return d <= 0; // lte
}

function inRange(x: Scalar, lo: Scalar, hi: Scalar): boolean {
  return compareScalars(x, lo) >= 0 && compareScalars(x, hi) <= 0;
}

/** A jsonb value test (undefined: the path leads nowhere; JSON null also counts as missing). */
export function jsonMatches(v: unknown, op: Operator, value: TestValue | undefined): boolean {
  const present = v !== undefined && v !== null;
  switch (op) {
    case 'exists':
      return present;
    case 'not_exists':
      return !present;
    case 'eq':
      return sameScalar(v, value as Scalar);
    case 'neq':
      return present && !sameScalar(v, value as Scalar);
    case 'in':
      return (value as Scalar[]).some((x) => sameScalar(v, x));
    case 'not_in':
      return present && !(value as Scalar[]).some((x) => sameScalar(v, x));
    case 'contains':
      if (Array.isArray(v)) return v.some((e) => sameScalar(e, value as Scalar));
      return typeof v === 'string' && typeof value === 'string' && v.includes(value);
    case 'starts_with':
      return typeof v === 'string' && v.startsWith(value as string);
    case 'between': {
      const [lo, hi] = value as Scalar[];
      return typeof v === typeof lo && isScalar(v) && typeof v !== 'boolean' && inRange(v, lo!, hi!);
    }
    default:
      return typeof v === typeof value && isScalar(v) && compare(op, compareScalars(v, value as Scalar));
  }
}

function fieldMatches(c: FieldCondition, pr: EvalProfile): boolean {
  const kind = PROFILE_FIELD_KINDS[c.field];
  const raw = pr[c.field];
  if (raw === null || raw === undefined) return c.op === 'not_exists';
  // Times compare as instants, so both sides become epoch milliseconds.
  const v: Scalar = raw instanceof Date ? raw.getTime() : raw;
  const val = (x: Scalar): Scalar => (kind === 'time' ? parseIsoTime(x as string)! : x);
  switch (c.op) {
    case 'exists':
      return true;
    case 'not_exists':
      return false;
    case 'in':
      return (c.value as Scalar[]).some((x) => val(x) === v);
    case 'not_in':
      return !(c.value as Scalar[]).some((x) => val(x) === v);
    case 'contains':
      return (v as string).includes(c.value as string);
    case 'starts_with':
      return (v as string).startsWith(c.value as string);
    case 'between': {
      const [lo, hi] = c.value as Scalar[];
      return inRange(v, val(lo!), val(hi!));
    }
    default:
      return compare(c.op, compareScalars(v, val(c.value as Scalar)));
  }
}

function inWindow(at: Date, w: Window, now: Date): boolean {
  const t = at.getTime();
  if (w.within_days !== undefined && t < now.getTime() - w.within_days * DAY_MS) return false;
  if (w.from !== undefined && t < parseIsoTime(w.from)!) return false;
  if (w.to !== undefined && t >= parseIsoTime(w.to)!) return false;
  return true;
}

function aggregateMatches(
  n: number | bigint,
  t: AggregateTest | undefined,
  scale: (x: number) => number | bigint,
) {
  if (t === undefined) return n >= 1;
  if (t.op === 'between') {
    const [lo, hi] = t.value as [number, number];
    return n >= scale(lo) && n <= scale(hi);
  }
  const v = scale(t.value as number);
  return compare(t.op, n === v ? 0 : n > v ? 1 : -1);
}

function eventMatches(c: EventCondition, pr: EvalProfile, now: Date): boolean {
  const f = c.event;
  const n = pr.events.filter(
    (e) =>
      (f.type === undefined || e.type === f.type) &&
      (f.name === undefined || e.name === f.name) &&
      inWindow(e.occurred_at, f, now) &&
      (f.where ?? []).every((w) => jsonMatches(resolvePath(e.payload, w.property), w.op, w.value)),
  ).length;
  return aggregateMatches(n, c.count, (x) => x);
}

function itemMatches(item: unknown, productId?: string, category?: string): boolean {
  if (typeof item !== 'object' || item === null || Array.isArray(item)) return false;
  const o = item as Record<string, unknown>;
  return (
    (productId === undefined || o.product_id === productId) &&
    (category === undefined || o.category === category)
  );
}

function orderMatches(c: OrderCondition, pr: EvalProfile, now: Date): boolean {
  const f = c.order;
  const statuses: readonly string[] = f.status === undefined ? ['completed'] : [f.status].flat();
  const hit = pr.orders.filter(
    (o) =>
      statuses.includes(o.status) &&
      inWindow(o.occurred_at, f, now) &&
      (f.currency === undefined || o.currency === f.currency) &&
      (f.product_id === undefined && f.category === undefined
        ? true
        : Array.isArray(o.items) && o.items.some((i) => itemMatches(i, f.product_id, f.category))),
  );
  if (c.sum === undefined) return aggregateMatches(hit.length, c.count, (x) => x);
  // Totals are numeric(18,2): summed in whole cents, exactly as SQL's numeric sum does.
  const cents = (x: number) => BigInt(Math.round(x * 100));
  const sum = hit.reduce((s, o) => s + cents(o.total), 0n);
  return aggregateMatches(sum, c.sum, cents);
}
