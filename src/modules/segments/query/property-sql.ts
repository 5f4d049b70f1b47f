import { COMPARISON, jsonSql, type Param } from './operator-sql';
import { splitPath } from './parse-values';
import type { PropertyCondition, Scalar } from './types';

/**
 * SQL for the `where` tests of an event condition, answered from `event_properties` (migration
 * 0029): typed rows of each processed event's payload, one per value at an addressable path, plus
 * one per scalar element of an array (at the array's path and a dot, what `contains` looks for).
 * The payload is read only for the rare event the table could not hold (its one marker row, path
 * '' and kind 'x') and for a substring test on a string longer than 500 characters (kind 'S', of
 * which the row keeps the first 501). docs/segments.md, "How property filters are evaluated".
 *
 * A test is written two ways over the same rows:
 * - `rowSql(c, w)`: whether the row `w` passes, for the grouped pass over a whole workspace that
 *   reads the rows of one path directly (`pathsOf(c)`, through event_properties_name_path_idx);
 * - `probeSql(c, r)`: EXISTS / NOT EXISTS over the rows of the event `r` (a profile's event from
 *   event_profiles, or another test's row), one descent of event_properties_seq_idx per event.
 */

/** The marker row's path: no query path is empty. */
const MARKER = '';

/** The stored paths holding what a test looks at (never the marker). */
export function pathsOf(c: PropertyCondition): string[] {
  if (c.op !== 'contains') return [c.property];
  // Array elements are stored at `path.`; a substring test also reads the string at the path.
  return typeof c.value === 'string' ? [c.property, `${c.property}.`] : [`${c.property}.`];
}

/** Tests that need a row at their path: all but not_exists. */
export const needsRow = (c: PropertyCondition): boolean => c.op !== 'not_exists';

/** Whether one event can have several rows passing the test (array elements: `contains`). */
export const manyRowsPerEvent = (c: PropertyCondition): boolean => c.op === 'contains';

/**
 * The test over the event's payload, for a marker row or a long string `w`: through the function
 * event_payload_at (migration 0029), one call per such row.
 */
function payloadSql(c: PropertyCondition, w: string, p: Param): string {
  return jsonSql(`event_payload_at(${w}.seq, ${p(splitPath(c.property))}::text[])`, c.op, c.value, p);
}

/** The paths parameter of a probe or a pass: the test's paths and the marker. */
export const pathsParam = (c: PropertyCondition, p: Param): string => `${p([...pathsOf(c), MARKER])}::text[]`;

/**
 * Whether row `w` (one of pathsOf(c) or the marker) passes the test. Written as an OR of the two
 * kinds rather than a CASE (the same in three-valued logic: `kind` is never NULL) because the
 * planner estimates an OR from the columns' statistics and a CASE at a flat guess: with the CASE it
 * expected 27× the rows of a brand test, chose a hash join over every profile of the workspace and
 * took 2–4× the time (docs/decisions.md, "Event properties in a typed table").
 */
export function rowSql(c: PropertyCondition, w: string, p: Param): string {
  return `((${w}.kind <> 'x' AND ${valueSql(c, w, p)}) OR (${w}.kind = 'x' AND ${payloadSql(c, w, p)}))`;
}

/**
 * EXISTS / NOT EXISTS over the property rows of the event `r` (an alias of event_profiles or of
 * event_properties), found by the event's seq alone (event_properties_seq_idx: the rows of one
 * event, at most 257). The seq is the only test an index can take: the path is written
 * `(…) IS TRUE`, so no other index of the table matches anything, and the probe cannot become a read
 * of all the workspace's rows of a name or path, whatever the statistics. `OFFSET 0` keeps each probe
 * a sub-plan run per event: without it PostgreSQL joined all the events to all their property rows,
 * and with no statistics chose a nested loop that read every row of the name for each event (27.9 s
 * over 3,436 events; docs/decisions.md, "Segment plans that cannot explode").
 */
export function probeSql(c: PropertyCondition, r: string, p: Param): string {
  const from = `FROM event_properties w WHERE w.seq = ${r}.seq AND (w.path = ANY(${pathsParam(c, p)})) IS TRUE`;
  if (needsRow(c)) return `EXISTS (SELECT 1 ${from} AND ${rowSql(c, 'w', p)} OFFSET 0)`;
  // not_exists: no row at the path; for a marker, the payload decides.
  const present = { property: c.property, op: 'exists' } as const;
  return `(NOT EXISTS (SELECT 1 ${from} AND (CASE WHEN w.kind = 'x' THEN ${payloadSql(present, 'w', p)} ELSE true END) OFFSET 0))`;
}

/** The value test of a row that is not a marker (NULL counts as false: only ever used in WHERE). */
function valueSql(c: PropertyCondition, w: string, p: Param): string {
  const { op, value } = c;
  const eq = (v: Scalar) => `${column(v)} = ${typed(v)}`;
  const inList = (list: Scalar[]) => {
    const groups = (['number', 'string', 'boolean'] as const)
      .map((t) => list.filter((v) => typeof v === t))
      .filter((g) => g.length > 0)
      .map((g) => `${column(g[0]!)} = ANY(${p(g.map(String))}::${SQL_TYPE[typeof g[0]! as 'number']}[])`);
    return `(${groups.join(' OR ')})`;
  };
  switch (op) {
    case 'exists':
      return 'true';
    case 'not_exists':
      return 'false'; // never asked: probeSql writes not_exists as NOT EXISTS
    case 'eq':
      return eq(value as Scalar);
    case 'neq':
      // Present (the row exists) and not equal: another type, or a container, is not equal.
      return `(${column(value as Scalar)} IS DISTINCT FROM ${typed(value as Scalar)})`;
    case 'in':
      return inList(value as Scalar[]);
    case 'not_in':
      return `(NOT COALESCE(${inList(value as Scalar[])}, false))`;
    case 'starts_with':
      // The lower bound lets a pass over one path start at the prefix (str is in code point order).
      return `(${w}.str >= ${typed(value as string)} AND starts_with(${w}.str, ${typed(value as string)}))`;
    case 'contains': {
      const element = eq(value as Scalar);
      if (typeof value !== 'string') return element;
      // At the path itself a string: a substring test; a long one's first 501 characters may not
      // hold the value, then the payload decides.
      const sub = `strpos(${w}.str, ${typed(value)}) > 0`;
      const atPath = `CASE ${w}.kind WHEN 's' THEN ${sub} WHEN 'S' THEN ${sub} OR ${payloadSql(c, w, p)} ELSE false END`;
      return `(CASE WHEN ${w}.path = ${p(c.property)}::text THEN ${atPath} ELSE ${element} END)`;
    }
    case 'between': {
      const [lo, hi] = value as Scalar[];
      return `(${column(lo!)} BETWEEN ${typed(lo!)} AND ${typed(hi!)})`;
    }
    default:
      return `(${column(value as Scalar)} ${COMPARISON[op]} ${typed(value as Scalar)})`;
  }

  function column(v: Scalar): string {
    return `${w}.${COLUMN[typeof v as 'number']}`;
  }
  function typed(v: Scalar): string {
    return `${p(String(v))}::${SQL_TYPE[typeof v as 'number']}`;
  }
}

const COLUMN = { number: 'num', string: 'str', boolean: 'bool' } as const;
const SQL_TYPE = { number: 'numeric', string: 'text', boolean: 'boolean' } as const;
