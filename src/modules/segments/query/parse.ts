import {
  checkNumber,
  checkPath,
  checkString,
  checkTest,
  checkTime,
  compareScalars,
  parseIsoTime,
  type Report,
} from './parse-values';
import {
  AGGREGATE_OPERATORS,
  EVENT_TYPE_NAMES,
  SEGMENT_LIMITS as L,
  ORDER_STATUS_NAMES,
  PROFILE_FIELD_KINDS,
  type ProfileFieldName,
  type QueryError,
  type SegmentQuery,
} from './types';

/**
 * The validator of the query language. Hand-written rather than a JSON schema because every error
 * must name the faulty node by JSON pointer, and a union schema's errors name every branch instead.
 * It reports as many problems as it finds (up to SEGMENT_LIMITS.errors), not just the first.
 */
export type ParseResult = { ok: true; query: SegmentQuery } | { ok: false; errors: QueryError[] };

/** The key that says what a node is, and the other keys that node may have. */
const NODE_KEYS: Record<string, readonly string[]> = {
  and: [],
  or: [],
  not: [],
  field: ['op', 'value'],
  attribute: ['op', 'value'],
  event: ['count'],
  order: ['count', 'sum'],
  segment: [],
};
const KINDS = Object.keys(NODE_KEYS);

type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const pointer = (key: string) => key.replace(/~/g, '~0').replace(/\//g, '~1');

interface State {
  report: Report;
  conditions: number;
}

export function parseSegmentQuery(input: unknown): ParseResult {
  const errors: QueryError[] = [];
  const report: Report = (path, message) => {
    if (errors.length < L.errors) errors.push({ path, message });
    return false;
  };
  checkNode(input, '', 1, { report, conditions: 0 });
  if (errors.length > 0) return { ok: false, errors };
  // Only known keys and JSON values are left, so a JSON round trip is an exact, detached copy.
  return { ok: true, query: JSON.parse(JSON.stringify(input)) as SegmentQuery };
}

function checkNode(v: unknown, path: string, depth: number, st: State): boolean {
  if (!isObject(v)) return st.report(path, 'must be an object: and, or, not or a condition');
  if (depth > L.depth) return st.report(path, `nests deeper than ${L.depth} levels`);
  const kinds = Object.keys(v).filter((k) => KINDS.includes(k));
  if (kinds.length !== 1) {
    const found = kinds.length === 0 ? 'none' : kinds.join(' and ');
    return st.report(path, `must have exactly one of ${KINDS.join(', ')} (found ${found})`);
  }
  const kind = kinds[0]!;
  for (const k of Object.keys(v)) {
    if (k !== kind && !NODE_KEYS[kind]!.includes(k))
      st.report(`${path}/${pointer(k)}`, `unknown key in ${kind} node`);
  }
  if (kind === 'and' || kind === 'or') {
    const list = v[kind];
    if (!Array.isArray(list) || list.length === 0)
      return st.report(`${path}/${kind}`, 'must be a non-empty list');
    let ok = true;
    for (const [i, c] of list.entries()) ok = checkNode(c, `${path}/${kind}/${i}`, depth + 1, st) && ok;
    return ok;
  }
  if (kind === 'not') return checkNode(v.not, `${path}/not`, depth + 1, st);
  countCondition(path, st);
  if (kind === 'field') return checkField(v, path, st.report);
  if (kind === 'attribute') {
    checkPath(v.attribute, `${path}/attribute`, st.report);
    return checkTest('json', v, path, st.report);
  }
  if (kind === 'event') return checkEvent(v, path, st);
  if (kind === 'order') return checkOrder(v, path, st.report);
  const id = v.segment;
  return checkNonEmpty(id, `${path}/segment`, st.report);
}

/** Reports only the first condition beyond the limit, not every one after it. */
function countCondition(path: string, st: State): void {
  st.conditions += 1;
  if (st.conditions === L.conditions + 1) st.report(path, `more than ${L.conditions} conditions`);
}

function checkField(v: Obj, path: string, report: Report): boolean {
  const f = v.field;
  if (typeof f !== 'string' || !Object.hasOwn(PROFILE_FIELD_KINDS, f)) {
    return report(`${path}/field`, `must be one of ${Object.keys(PROFILE_FIELD_KINDS).join(', ')}`);
  }
  return checkTest(PROFILE_FIELD_KINDS[f as ProfileFieldName], v, path, report);
}

function checkKeys(v: Obj, allowed: readonly string[], path: string, report: Report): void {
  for (const k of Object.keys(v)) if (!allowed.includes(k)) report(`${path}/${pointer(k)}`, 'unknown key');
}

function checkEvent(v: Obj, path: string, st: State): boolean {
  const f = v.event;
  const fPath = `${path}/event`;
  if (!isObject(f)) st.report(fPath, 'must be an object {type?, name?, within_days? | from?/to?, where?}');
  else {
    checkKeys(f, ['type', 'name', 'within_days', 'from', 'to', 'where'], fPath, st.report);
    if ('type' in f && !(EVENT_TYPE_NAMES as readonly unknown[]).includes(f.type)) {
      st.report(`${fPath}/type`, `must be one of ${EVENT_TYPE_NAMES.join(', ')}`);
    }
    if ('name' in f) checkNonEmpty(f.name, `${fPath}/name`, st.report);
    checkWindow(f, fPath, st.report);
    if ('where' in f) checkWhere(f.where, `${fPath}/where`, st);
  }
  if ('count' in v) checkAggregate(v.count, `${path}/count`, 'count', st.report);
  return true;
}

function checkWhere(w: unknown, path: string, st: State): boolean {
  if (!Array.isArray(w) || w.length > L.where)
    return st.report(path, `must be a list of at most ${L.where} conditions`);
  for (const [i, c] of w.entries()) {
    const cPath = `${path}/${i}`;
    if (!isObject(c)) {
      st.report(cPath, 'must be an object {property, op, value}');
      continue;
    }
    countCondition(cPath, st);
    checkKeys(c, ['property', 'op', 'value'], cPath, st.report);
    checkPath(c.property, `${cPath}/property`, st.report);
    checkTest('json', c, cPath, st.report);
  }
  return true;
}

function checkOrder(v: Obj, path: string, report: Report): boolean {
  const f = v.order;
  const fPath = `${path}/order`;
  if (!isObject(f)) report(fPath, 'must be an object {status?, within_days? | from?/to?, product_id?, …}');
  else {
    checkKeys(
      f,
      ['status', 'within_days', 'from', 'to', 'product_id', 'category', 'currency'],
      fPath,
      report,
    );
    if ('status' in f) checkStatus(f.status, `${fPath}/status`, report);
    if ('product_id' in f) checkNonEmpty(f.product_id, `${fPath}/product_id`, report);
    if ('category' in f) checkNonEmpty(f.category, `${fPath}/category`, report);
    if ('currency' in f && (typeof f.currency !== 'string' || !/^[A-Z]{3}$/.test(f.currency))) {
      report(`${fPath}/currency`, 'must be an ISO 4217 code in capitals (EUR)');
    }
    checkWindow(f, fPath, report);
  }
  if ('count' in v && 'sum' in v) report(`${path}/sum`, 'test count or sum, not both');
  if ('count' in v) checkAggregate(v.count, `${path}/count`, 'count', report);
  if ('sum' in v) checkAggregate(v.sum, `${path}/sum`, 'sum', report);
  return true;
}

function checkStatus(s: unknown, path: string, report: Report): boolean {
  const ok = (x: unknown) => (ORDER_STATUS_NAMES as readonly unknown[]).includes(x);
  if (Array.isArray(s) ? s.length > 0 && s.every(ok) : ok(s)) return true;
  return report(path, `must be one of ${ORDER_STATUS_NAMES.join(', ')}, or a non-empty list of them`);
}

function checkNonEmpty(v: unknown, path: string, report: Report): boolean {
  if (!checkString(v, path, report)) return false;
  return v.length === 0 ? report(path, 'must not be empty') : true;
}

function checkWindow(f: Obj, path: string, report: Report): boolean {
  if ('within_days' in f) {
    const d = f.within_days;
    if (!Number.isInteger(d) || (d as number) < L.withinDaysMin || (d as number) > L.withinDaysMax) {
      report(
        `${path}/within_days`,
        `must be a whole number of days from ${L.withinDaysMin} to ${L.withinDaysMax}`,
      );
    }
    if ('from' in f || 'to' in f) report(`${path}/within_days`, 'use within_days or from/to, not both');
  }
  const from =
    'from' in f && checkTime(f.from, `${path}/from`, report) ? parseIsoTime(f.from as string) : null;
  const to = 'to' in f && checkTime(f.to, `${path}/to`, report) ? parseIsoTime(f.to as string) : null;
  if (from !== null && to !== null && from >= to) report(`${path}/to`, 'must be later than from');
  return true;
}

function checkAggregate(a: unknown, path: string, what: 'count' | 'sum', report: Report): boolean {
  if (!isObject(a)) return report(path, 'must be an object {op, value}');
  checkKeys(a, ['op', 'value'], path, report);
  if (!(AGGREGATE_OPERATORS as readonly unknown[]).includes(a.op)) {
    return report(`${path}/op`, `must be one of ${AGGREGATE_OPERATORS.join(', ')}`);
  }
  const vPath = `${path}/value`;
  const one = (x: unknown, p: string) =>
    what === 'sum'
      ? checkNumber(x, p, report, true)
      : Number.isInteger(x) && (x as number) >= 0 && (x as number) <= L.count
        ? true
        : report(p, `must be a whole number from 0 to ${L.count}`);
  if (a.op !== 'between') {
    if (Array.isArray(a.value)) return report(vPath, `${a.op} takes a single number`);
    return one(a.value, vPath);
  }
  const v = a.value;
  if (!Array.isArray(v) || v.length !== 2) return report(vPath, 'must be a pair [low, high]');
  const ok0 = one(v[0], `${vPath}/0`);
  const ok1 = one(v[1], `${vPath}/1`);
  if (ok0 && ok1 && compareScalars(v[0], v[1]) > 0) return report(vPath, 'low must not be greater than high');
  return ok0 && ok1;
}
