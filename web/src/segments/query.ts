import {
  arityOf,
  COUNT_OPS,
  type Comparison,
  type CountOp,
  type Node,
  newId,
  OPS,
  type Op,
  type PropertyTest,
  type Scalar,
  type Window,
} from './form';

// The segment builder's model: a segment query (docs/segments.md) <-> the builder's form state.
// Pure functions, no React: `toQuery(fromQuery(q))` gives back `q` for every shape the language has,
// and a shape the builder does not know is kept as a raw JSON node rather than dropped.

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

// ---- scalars ---------------------------------------------------------------------------------

export function scalarOf(v: unknown): Scalar {
  if (typeof v === 'number') return { t: 'number', v: String(v) };
  if (typeof v === 'boolean') return { t: 'boolean', v: String(v) };
  return { t: 'string', v: typeof v === 'string' ? v : JSON.stringify(v) };
}

/** A typed value back to JSON. A number that does not parse is sent as written: the API names it. */
export function jsonOf(s: Scalar): Json {
  if (s.t === 'number') {
    const n = Number(s.v);
    return s.v.trim() !== '' && Number.isFinite(n) ? n : s.v;
  }
  if (s.t === 'boolean') return s.v === 'true';
  return s.v;
}

function valuesOf(op: Op | CountOp, value: unknown): Scalar[] {
  switch (arityOf(op)) {
    case 'none':
      return [];
    case 'two':
    case 'list':
      return Array.isArray(value) ? value.map(scalarOf) : [scalarOf(value)];
    default:
      return [scalarOf(value)];
  }
}

function jsonValueOf(op: Op | CountOp, values: Scalar[]): Json | undefined {
  switch (arityOf(op)) {
    case 'none':
      return undefined;
    case 'two':
    case 'list':
      return values.map(jsonOf);
    default:
      return values[0] ? jsonOf(values[0]) : '';
  }
}

function windowOf(o: Obj): Window {
  if ('within_days' in o) return { mode: 'within', within_days: scalarOf(o.within_days) };
  if ('from' in o || 'to' in o)
    return {
      mode: 'range',
      from: typeof o.from === 'string' ? o.from : '',
      to: typeof o.to === 'string' ? o.to : '',
    };
  return { mode: 'all' };
}

function putWindow(out: Obj, w: Window): void {
  if (w.mode === 'within') out.within_days = jsonOf(w.within_days);
  if (w.mode === 'range') {
    if (w.from) out.from = w.from;
    if (w.to) out.to = w.to;
  }
}

const EVENT_KEYS = new Set(['type', 'name', 'within_days', 'from', 'to', 'where']);

const ORDER_KEYS = new Set(['status', 'within_days', 'from', 'to', 'product_id', 'category', 'currency']);

const onlyKeys = (o: Obj, allowed: Set<string>) => Object.keys(o).every((k) => allowed.has(k));

const isOp = (v: unknown): v is Op => typeof v === 'string' && (OPS as readonly string[]).includes(v);

const isCountOp = (v: unknown): v is CountOp =>
  typeof v === 'string' && (COUNT_OPS as readonly string[]).includes(v);

function comparisonOf(v: unknown): Comparison | null {
  if (!isObj(v) || !isCountOp(v.op) || !onlyKeys(v, new Set(['op', 'value']))) return null;
  return { op: v.op, values: valuesOf(v.op, v.value) };
}

function comparisonJson(c: Comparison): Json {
  return { op: c.op, value: jsonValueOf(c.op, c.values) ?? 0 };
}

function testOf(o: Obj, key: string): { op: Op; values: Scalar[] } | null {
  if (!isOp(o.op)) return null;
  const allowed = new Set([key, 'op', 'value']);
  if (!onlyKeys(o, allowed)) return null;
  if (arityOf(o.op) === 'none' ? 'value' in o : !('value' in o)) return null;
  if (arityOf(o.op) === 'two' && !(Array.isArray(o.value) && o.value.length === 2)) return null;
  if (arityOf(o.op) === 'list' && !Array.isArray(o.value)) return null;
  if (arityOf(o.op) === 'one' && (Array.isArray(o.value) || isObj(o.value) || o.value === null)) return null;
  return { op: o.op, values: valuesOf(o.op, o.value) };
}

function testJson(key: string, name: string, op: Op, values: Scalar[]): Json {
  const v = jsonValueOf(op, values);
  return v === undefined ? { [key]: name, op } : { [key]: name, op, value: v };
}

// ---- query -> form ---------------------------------------------------------------------------

export function fromQuery(q: unknown): Node {
  const id = newId();
  const raw: Node = { kind: 'raw', id, json: q };
  if (!isObj(q)) return raw;
  const keys = Object.keys(q);

  if (keys.length === 1 && (keys[0] === 'and' || keys[0] === 'or')) {
    const list = q[keys[0]];
    if (!Array.isArray(list)) return raw;
    return { kind: 'group', id, combinator: keys[0], children: list.map(fromQuery) };
  }
  if (keys.length === 1 && keys[0] === 'not') return { kind: 'not', id, child: fromQuery(q.not) };
  if (keys.length === 1 && keys[0] === 'segment' && typeof q.segment === 'string')
    return { kind: 'segment', id, segment: q.segment };

  if ('field' in q && typeof q.field === 'string') {
    const t = testOf(q, 'field');
    return t ? { kind: 'field', id, field: q.field, ...t } : raw;
  }
  if ('attribute' in q && typeof q.attribute === 'string') {
    const t = testOf(q, 'attribute');
    return t ? { kind: 'attribute', id, path: q.attribute, ...t } : raw;
  }
  if ('event' in q) {
    const e = q.event;
    if (!isObj(e) || !onlyKeys(e, EVENT_KEYS) || !onlyKeys(q, new Set(['event', 'count']))) return raw;
    const count = 'count' in q ? comparisonOf(q.count) : null;
    if ('count' in q && !count) return raw;
    if ('type' in e && typeof e.type !== 'string') return raw;
    if ('name' in e && typeof e.name !== 'string') return raw;
    const where: PropertyTest[] = [];
    if ('where' in e) {
      if (!Array.isArray(e.where) || e.where.length === 0) return raw;
      for (const w of e.where) {
        const t = isObj(w) && typeof w.property === 'string' ? testOf(w, 'property') : null;
        if (!t || !isObj(w)) return raw;
        where.push({ property: w.property as string, ...t });
      }
    }
    const window = windowOf(e);
    if (window.mode === 'range' && (('from' in e && !window.from) || ('to' in e && !window.to))) return raw;
    return {
      kind: 'event',
      id,
      type: (e.type as string | undefined) ?? '',
      name: (e.name as string | undefined) ?? '',
      window,
      where,
      count,
    };
  }
  if ('order' in q) {
    const o = q.order;
    if (!isObj(o) || !onlyKeys(o, ORDER_KEYS) || !onlyKeys(q, new Set(['order', 'count', 'sum']))) return raw;
    if ('count' in q && 'sum' in q) return raw;
    const measure = 'count' in q ? 'count' : 'sum' in q ? 'sum' : 'none';
    const comparison = measure === 'none' ? null : comparisonOf(q[measure]);
    if (measure !== 'none' && !comparison) return raw;
    const status = o.status;
    if (status !== undefined && typeof status !== 'string' && !(Array.isArray(status) && status.length > 0))
      return raw;
    for (const k of ['product_id', 'category', 'currency'] as const)
      if (k in o && (typeof o[k] !== 'string' || o[k] === '')) return raw;
    const window = windowOf(o);
    if (window.mode === 'range' && (('from' in o && !window.from) || ('to' in o && !window.to))) return raw;
    return {
      kind: 'order',
      id,
      status: status === undefined ? [] : Array.isArray(status) ? status.map(String) : [status],
      statusIsList: Array.isArray(status),
      window,
      product_id: (o.product_id as string | undefined) ?? '',
      category: (o.category as string | undefined) ?? '',
      currency: (o.currency as string | undefined) ?? '',
      measure,
      comparison: comparison ?? { op: 'gte', values: [{ t: 'number', v: '1' }] },
    };
  }
  return raw;
}

// ---- form -> query ---------------------------------------------------------------------------

export function toQuery(n: Node): Json {
  switch (n.kind) {
    case 'group':
      return { [n.combinator]: n.children.map(toQuery) };
    case 'not':
      return { not: toQuery(n.child) };
    case 'segment':
      return { segment: n.segment };
    case 'field':
      return testJson('field', n.field, n.op, n.values);
    case 'attribute':
      return testJson('attribute', n.path, n.op, n.values);
    case 'event': {
      const event: Obj = {};
      if (n.type) event.type = n.type;
      if (n.name) event.name = n.name;
      putWindow(event, n.window);
      if (n.where.length) event.where = n.where.map((w) => testJson('property', w.property, w.op, w.values));
      const out: Obj = { event };
      if (n.count) out.count = comparisonJson(n.count);
      return out as Json;
    }
    case 'order': {
      const order: Obj = {};
      if (n.status.length) order.status = n.statusIsList || n.status.length > 1 ? n.status : n.status[0];
      putWindow(order, n.window);
      if (n.product_id) order.product_id = n.product_id;
      if (n.category) order.category = n.category;
      if (n.currency) order.currency = n.currency;
      const out: Obj = { order };
      if (n.measure !== 'none') out[n.measure] = comparisonJson(n.comparison);
      return out as Json;
    }
    case 'raw':
      return n.json as Json;
  }
}

// ---- building blocks for the editor ----------------------------------------------------------
