/**
 * An event's property rows (the `event_properties` table, migrations/0029_event_properties.sql),
 * walked from its payload here rather than in the database. The SQL function `event_property_rows`
 * stays the definition: property-rows.test.ts proves this walk gives exactly its rows on both
 * engines. Why here: that function is a recursive query run once per event, and it was the largest
 * single cost of processing on PostgreSQL (docs/decisions.md, "Property rows walked in the
 * service"); this walk is a few microseconds of JavaScript.
 *
 * What the database still decides, because JavaScript cannot: a number's exact value and its text
 * (JSON.parse turns `1.50` and `12345678901234567891` into doubles), so numeric rows carry the
 * location of their value (`at`) and the statement reads it from the payload it stores; and with
 * it the row-width half of the verdict (an event with a row too wide for an index gets the marker).
 */

/** A row before the database fills in `num` (kind `n`) and applies the width verdict. */
export interface PropertyRow {
  /** The dotted path a query writes; an array's element rows end with a dot (`tags.`). */
  path: string;
  /** o(bject), a(rray), n(umber), b(oolean), s(tring), S (a string of more than 500 characters), x (marker). */
  kind: 'o' | 'a' | 'n' | 'b' | 's' | 'S' | 'x';
  str: string | null;
  bool: boolean | null;
  /** Where the value is in the payload (dotted; keys never contain a dot), for numbers; else null. */
  at: string | null;
}

/** The query language's limits (docs/segments.md): paths of at most 10 segments and 500 characters. */
const MAX_DEPTH = 10;
const MAX_PATH_CHARS = 500;
/** Strings longer than this many characters are kind S, and keep one character more. */
const MAX_STRING_CHARS = 500;
/** More rows than this and the event gets the marker alone. */
const MAX_ROWS = 256;

/** The marker row: the event's tests read its payload. */
export const MARKER_ROW: PropertyRow = Object.freeze({
  path: '',
  kind: 'x',
  str: null,
  bool: null,
  at: null,
});

/** Length in code points, as PostgreSQL's char_length counts (a surrogate pair is one). */
function charLength(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n--;
        i++;
      }
    }
  }
  return n;
}

/** The first `n` code points of `s` (PostgreSQL's left()). */
function leftChars(s: string, n: number): string {
  let out = 0;
  let i = 0;
  while (i < s.length && out < n) {
    const c = s.charCodeAt(i);
    i += c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00 ? 2 : 1;
    out++;
  }
  return s.slice(0, i);
}

/** A row for a scalar or container value, or null for JSON null. */
function rowOf(path: string, v: unknown, at: string): PropertyRow | null {
  if (v === null || v === undefined) return null;
  if (Array.isArray(v)) return { path, kind: 'a', str: null, bool: null, at: null };
  switch (typeof v) {
    case 'object':
      return { path, kind: 'o', str: null, bool: null, at: null };
    case 'number':
      return { path, kind: 'n', str: null, bool: null, at };
    case 'boolean':
      return { path, kind: 'b', str: null, bool: v, at: null };
    case 'string':
      return charLength(v) > MAX_STRING_CHARS
        ? { path, kind: 'S', str: leftChars(v, MAX_STRING_CHARS + 1), bool: null, at: null }
        : { path, kind: 's', str: v, bool: null, at: null };
    default:
      return null;
  }
}

/**
 * The rows of one payload, or the marker alone when there would be more than MAX_ROWS of them.
 * Order is not significant (the table has no order).
 */
export function propertyRows(payload: unknown): PropertyRow[] {
  const rows: PropertyRow[] = [];
  let overflow = false;
  const push = (r: PropertyRow | null) => {
    if (r === null) return;
    if (rows.length === MAX_ROWS) overflow = true;
    else rows.push(r);
  };
  // Children of a node are expanded while its depth is below MAX_DEPTH and its path within bounds;
  // a node gets rows when its own path is within bounds (the SQL function's two conditions).
  const walk = (path: string, pathChars: number, depth: number, v: unknown): void => {
    if (overflow) return;
    if (depth > 0 && pathChars <= MAX_PATH_CHARS) {
      push(rowOf(path, v, path));
      if (Array.isArray(v)) {
        for (let i = 0; i < v.length; i++) {
          const el = v[i];
          const t = typeof el;
          if (t === 'string' || t === 'number' || t === 'boolean')
            push(rowOf(`${path}.`, el, `${path}.${i}`));
        }
      }
    }
    if (depth >= MAX_DEPTH || pathChars > MAX_PATH_CHARS || v === null || typeof v !== 'object') return;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const key = String(i);
        walk(
          depth === 0 ? key : `${path}.${key}`,
          depth === 0 ? key.length : pathChars + 1 + key.length,
          depth + 1,
          v[i],
        );
      }
      return;
    }
    for (const [key, child] of Object.entries(v as Record<string, unknown>)) {
      if (key === '' || key.includes('.')) continue;
      const kc = charLength(key);
      walk(depth === 0 ? key : `${path}.${key}`, depth === 0 ? kc : pathChars + 1 + kc, depth + 1, child);
    }
  };
  walk('', 0, 0, payload);
  return overflow ? [MARKER_ROW] : rows;
}
