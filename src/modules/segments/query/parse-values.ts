import { SEGMENT_LIMITS as L, OPERATORS, type Operator, type Scalar } from './types';

/**
 * Checks of one operator and its value, for every kind of tested value. Each problem is reported at
 * the JSON pointer of the faulty part, so a client can point at it in an editor.
 */
/** Records a problem and answers false, so a check can `return report(…)`. */
export type Report = (path: string, message: string) => false;
/** `json` values are attributes and event properties: their type is only known per row. */
export type ValueKind = 'text' | 'money' | 'number' | 'time' | 'json';

const RELATIONAL = new Set<Operator>(['gt', 'gte', 'lt', 'lte']);
const BY_KIND: Record<ValueKind, ReadonlySet<Operator>> = {
  json: new Set(OPERATORS),
  text: new Set(OPERATORS),
  money: new Set(OPERATORS.filter((o) => o !== 'contains' && o !== 'starts_with')),
  number: new Set(OPERATORS.filter((o) => o !== 'contains' && o !== 'starts_with')),
  time: new Set(OPERATORS.filter((o) => !['contains', 'starts_with', 'in', 'not_in'].includes(o))),
};

// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is exactly what PostgreSQL text refuses
const NUL = /\u0000/;
/** In `u` mode a surrogate pair is one code point, so this matches only lone surrogates. */
const LONE_SURROGATE = /\p{Cs}/u;

export function checkString(v: unknown, path: string, report: Report, what = 'a string'): v is string {
  if (typeof v !== 'string') return report(path, `must be ${what}`);
  if (v.length > L.string) return report(path, `must be at most ${L.string} characters`);
  // PostgreSQL text holds neither NUL nor lone UTF-16 surrogates, so such a value could never match.
  if (NUL.test(v) || LONE_SURROGATE.test(v)) return report(path, 'must not contain NUL or lone surrogates');
  return true;
}

export function checkNumber(v: unknown, path: string, report: Report, money: boolean): v is number {
  if (typeof v !== 'number' || !Number.isFinite(v)) return report(path, 'must be a number');
  if (Math.abs(v) > L.number) return report(path, `must be between -${L.number} and ${L.number}`);
  if (money && !/^-?\d+(\.\d{1,2})?$/.test(String(v))) {
    return report(path, 'must have at most 2 decimals (money is stored in cents)');
  }
  return true;
}

const ISO =
  /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,3})?)?(Z|[+-](\d{2}):(\d{2})))?$/;

/** Epoch ms of a strict ISO 8601 date or date-time (date-only is midnight UTC), else null. */
export function parseIsoTime(s: string): number | null {
  const m = ISO.exec(s);
  if (!m) return null;
  const [y, mo, d, h = 0, mi = 0, sec = 0, , oh = 0, om = 0] = [1, 2, 3, 4, 5, 6, 7, 8, 9].map((i) =>
    m[i] === undefined ? undefined : Number(m[i]),
  ) as number[];
  // Date.parse rolls 2024-02-30 over to March; a typo should be an error instead.
  const daysInMonth = new Date(Date.UTC(y!, mo!, 0)).getUTCDate();
  if (y! < 1000 || mo! < 1 || mo! > 12 || d! < 1 || d! > daysInMonth) return null;
  if (h > 23 || mi > 59 || sec > 59 || oh > 23 || om > 59) return null;
  if (m[4] !== undefined && m[7] === undefined) return null; // a time needs its zone: no session-TZ guessing
  const t = Date.parse(s);
  return Number.isNaN(t) ? null : t;
}

export function checkTime(v: unknown, path: string, report: Report): v is string {
  if (typeof v !== 'string' || parseIsoTime(v) === null) {
    return report(path, 'must be an ISO 8601 date (2024-05-01) or date-time with zone (…T10:00:00Z)');
  }
  return true;
}

/** One scalar of the given kind; json values may be strings, numbers or booleans. */
function checkScalar(
  kind: ValueKind,
  v: unknown,
  path: string,
  report: Report,
  ops: 'any' | 'ordered',
): boolean {
  switch (kind) {
    case 'text':
      return checkString(v, path, report);
    case 'money':
    case 'number':
      return checkNumber(v, path, report, kind === 'money');
    case 'time':
      return checkTime(v, path, report);
    case 'json':
      if (typeof v === 'string') return checkString(v, path, report);
      if (typeof v === 'number') return checkNumber(v, path, report, false);
      if (typeof v === 'boolean' && ops === 'any') return true;
      return report(
        path,
        ops === 'any' ? 'must be a string, number or boolean' : 'must be a string or number',
      );
  }
}

/** Orders scalars of one type the way both engines do: numbers numerically, strings by code point. */
export function compareScalars(a: Scalar, b: Scalar): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return compareCodePoints(String(a), String(b));
}

/** Code point order, which is PostgreSQL's COLLATE "C" order on UTF-8 (not UTF-16 unit order). */
export function compareCodePoints(a: string, b: string): number {
  const x = Array.from(a);
  const y = Array.from(b);
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i]!.codePointAt(0)! - y[i]!.codePointAt(0)!;
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

/** `op` and `value` of a condition node (field, attribute or property) of the given kind. */
export function checkTest(
  kind: ValueKind,
  node: Record<string, unknown>,
  path: string,
  report: Report,
): boolean {
  const op = node.op;
  if (typeof op !== 'string' || !(OPERATORS as readonly string[]).includes(op)) {
    return report(`${path}/op`, `must be one of ${OPERATORS.join(', ')}`);
  }
  if (!BY_KIND[kind].has(op as Operator))
    return report(`${path}/op`, `${op} does not apply to a ${kind} value`);
  const vPath = `${path}/value`;
  const v = node.value;
  if (op === 'exists' || op === 'not_exists')
    return 'value' in node ? report(vPath, `${op} takes no value`) : true;
  if (!('value' in node)) return report(path, `${op} needs a value`);
  if (op === 'in' || op === 'not_in') {
    if (!Array.isArray(v) || v.length === 0 || v.length > L.list) {
      return report(vPath, `must be a list of 1 to ${L.list} values`);
    }
    let ok = true;
    for (const [i, x] of v.entries()) ok = checkScalar(kind, x, `${vPath}/${i}`, report, 'any') && ok;
    return ok;
  }
  if (op === 'between') return checkPair(kind, v, vPath, report);
  if (Array.isArray(v)) return report(vPath, `${op} takes a single value, not a list`);
  if (op === 'starts_with' && kind === 'json') return checkString(v, vPath, report);
  return checkScalar(kind, v, vPath, report, RELATIONAL.has(op as Operator) ? 'ordered' : 'any');
}

function checkPair(kind: ValueKind, v: unknown, path: string, report: Report): boolean {
  if (!Array.isArray(v) || v.length !== 2) return report(path, 'must be a pair [low, high]');
  const ok0 = checkScalar(kind, v[0], `${path}/0`, report, 'ordered');
  const ok1 = checkScalar(kind, v[1], `${path}/1`, report, 'ordered');
  if (!ok0 || !ok1) return false;
  if (typeof v[0] !== typeof v[1]) return report(path, 'low and high must be of the same type');
  const [lo, hi] = kind === 'time' ? [parseIsoTime(v[0])!, parseIsoTime(v[1])!] : [v[0], v[1]];
  return compareScalars(lo, hi) > 0 ? report(path, 'low must not be greater than high') : true;
}

/**
 * Splits an attribute or property path ("plan.tier", "tags.0"). A segment made of digits indexes an
 * array; signs, spaces and leading zeros are refused because PostgreSQL would read "-1" or "01" as
 * an index while the evaluator and the documentation would not.
 */
export function checkPath(v: unknown, path: string, report: Report): v is string {
  if (!checkString(v, path, report)) return false;
  const parts = v.split('.');
  if (v.length === 0 || parts.some((s) => s.length === 0)) {
    return report(path, 'must be a dotted path of non-empty names');
  }
  if (parts.length > L.pathSegments) return report(path, `must have at most ${L.pathSegments} segments`);
  if (parts.some((s) => /^\s*[+-]?\d+$/.test(s) && !/^(0|[1-9]\d{0,8})$/.test(s))) {
    return report(path, 'an index segment must be a plain number without sign or leading zero');
  }
  return true;
}

export const splitPath = (p: string): string[] => p.split('.');
