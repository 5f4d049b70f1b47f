import { parseIsoTime } from './parse-values';
import {
  type FieldCondition,
  type Operator,
  PROFILE_FIELD_KINDS,
  type Scalar,
  type TestValue,
} from './types';

/**
 * SQL for one operator test. Every expression returned here is TRUE or FALSE, never NULL: a missing
 * value makes a test false (except not_exists), and `not` can then be plain SQL NOT. Values are
 * always $n parameters; only column names, casts and operators (all from fixed tables) are spliced.
 */
export type Param = (value: unknown) => string;

export const COMPARISON: Partial<Record<Operator, string>> = {
  eq: '=',
  neq: '<>',
  gt: '>',
  gte: '>=',
  lt: '<',
  lte: '<=',
};

const COLUMN_TYPE = { text: 'text', money: 'numeric', number: 'float8', time: 'timestamptz' } as const;

/** Parameters travel as text (what both drivers send anyway), so numbers keep their shortest form. */
function paramText(kind: keyof typeof COLUMN_TYPE, v: Scalar): string {
  if (kind === 'time') return new Date(parseIsoTime(v as string)!).toISOString();
  return String(v);
}

/** A profile column test; NULL columns are missing values. */
export function fieldSql(c: FieldCondition, p: Param): string {
  const kind = PROFILE_FIELD_KINDS[c.field];
  const type = COLUMN_TYPE[kind];
  const col = `p.${c.field}`;
  // Text order is code point order (COLLATE "C"), whatever the database's default collation.
  const ordered = kind === 'text' ? `${col} COLLATE "C"` : col;
  const one = (v: TestValue | undefined) => `${p(paramText(kind, v as Scalar))}::${type}`;
  const list = () => `${p((c.value as Scalar[]).map((v) => paramText(kind, v)))}::${type}[]`;
  const pair = c.value as Scalar[];
  switch (c.op) {
    case 'exists':
      return `(${col} IS NOT NULL)`;
    case 'not_exists':
      return `(${col} IS NULL)`;
    case 'in':
      return `COALESCE(${col} = ANY(${list()}), false)`;
    case 'not_in':
      return `COALESCE(${col} <> ALL(${list()}), false)`;
    case 'between':
      return `COALESCE(${ordered} BETWEEN ${one(pair[0])} AND ${one(pair[1])}, false)`;
    case 'contains':
      return `COALESCE(strpos(${col}, ${one(c.value)}) > 0, false)`;
    case 'starts_with':
      return `COALESCE(starts_with(${col}, ${one(c.value)}), false)`;
    case 'eq':
    case 'neq':
      return `COALESCE(${col} ${COMPARISON[c.op]} ${one(c.value)}, false)`;
    default:
      return `COALESCE(${ordered} ${COMPARISON[c.op]} ${one(c.value)}, false)`;
  }
}

/**
 * A test of a jsonb value `a` (an attribute or event property, already parenthesized; SQL NULL when
 * the path leads nowhere). A JSON null counts as missing. Numbers compare only with JSON numbers and
 * strings only with JSON strings; the CASE guards also keep the ::numeric cast away from non-numbers
 * (AND does not promise an evaluation order, CASE does).
 */
export function jsonSql(a: string, op: Operator, value: TestValue | undefined, p: Param): string {
  const type = `jsonb_typeof(${a})`;
  const present = `COALESCE(${type}, 'null') <> 'null'`;
  const text = `(${a} #>> '{}')`;
  // jsonb equality is typed already ("1" ≠ 1) and an array or object never equals a scalar, so a
  // list of scalars needs no type guard: one hashed comparison per row.
  const inList = (list: TestValue | undefined) =>
    `COALESCE(${a} = ANY(${p((list as Scalar[]).map((v) => JSON.stringify(v)))}::jsonb[]), false)`;
  switch (op) {
    case 'exists':
      return `(${present})`;
    case 'not_exists':
      return `(COALESCE(${type}, 'null') = 'null')`;
    case 'eq':
      return `COALESCE(${a} = ${p(JSON.stringify(value))}::jsonb, false)`;
    case 'neq':
      return `(${present} AND ${a} <> ${p(JSON.stringify(value))}::jsonb)`;
    case 'in':
      return inList(value);
    case 'not_in':
      return `(${present} AND NOT ${inList(value)})`;
    case 'starts_with':
      return `CASE WHEN ${type} = 'string' THEN starts_with(${text}, ${p(value)}::text) ELSE false END`;
    case 'contains': {
      const inArray = `${a} @> ${p(JSON.stringify([value]))}::jsonb`;
      if (typeof value !== 'string') return `CASE WHEN ${type} = 'array' THEN ${inArray} ELSE false END`;
      return `CASE ${type} WHEN 'array' THEN ${inArray} WHEN 'string' THEN strpos(${text}, ${p(value)}::text) > 0 ELSE false END`;
    }
    case 'between': {
      const [lo, hi] = value as Scalar[];
      return ordered(lo!, (x) => `${x} BETWEEN ${typed(lo!)} AND ${typed(hi!)}`);
    }
    default:
      return ordered(value as Scalar, (x) => `${x} ${COMPARISON[op]} ${typed(value as Scalar)}`);
  }

  function typed(v: Scalar): string {
    return typeof v === 'number' ? `${p(String(v))}::numeric` : `${p(v)}::text`;
  }
  function ordered(sample: Scalar, test: (x: string) => string): string {
    return typeof sample === 'number'
      ? `CASE WHEN ${type} = 'number' THEN ${test(`${a}::numeric`)} ELSE false END`
      : `CASE WHEN ${type} = 'string' THEN ${test(`${text} COLLATE "C"`)} ELSE false END`;
  }
}
