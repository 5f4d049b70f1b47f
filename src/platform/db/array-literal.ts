/**
 * PostgreSQL array literals for query parameters, built in one pass. pg encodes an array parameter
 * by appending each quoted, twice-regex-escaped element to a growing string; for the pipeline's
 * parameters of thousands of ids per statement that was the service's largest allocation (a fifth
 * of all bytes allocated while processing, docs/benchmarks.md). The literal is the same, character
 * for character (array-literal.test.ts checks it against pg's own), so the server sees no change.
 */

/** Characters an element must have escaped inside its double quotes. */
const SPECIAL = /[\\"]/;

/**
 * `{"a","b",NULL}` for a flat array of strings, numbers, bigints, booleans and nulls; null for
 * anything else (dates, buffers, nested arrays, objects), which pg keeps encoding itself.
 */
export function arrayLiteral(values: readonly unknown[]): string | null {
  let plain = true;
  for (const v of values) {
    if (typeof v === 'string') {
      if (SPECIAL.test(v)) plain = false;
    } else if (v === null || v === undefined) plain = false;
    else if (typeof v !== 'number' && typeof v !== 'bigint' && typeof v !== 'boolean') return null;
  }
  if (values.length === 0) return '{}';
  // The common case, ids and numbers: one join, no per-element strings.
  if (plain) return `{"${values.join('","')}"}`;
  const parts = new Array<string>(values.length);
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (v === null || v === undefined) parts[i] = 'NULL';
    else {
      const text = String(v);
      parts[i] = `"${SPECIAL.test(text) ? text.replace(/[\\"]/g, '\\$&') : text}"`;
    }
  }
  return `{${parts.join(',')}}`;
}

/** The parameters with every flat array encoded here (others are left to pg). */
export function encodeArrayParams(params: readonly unknown[] | undefined): unknown[] | undefined {
  if (!params) return undefined;
  let out: unknown[] | undefined;
  for (let i = 0; i < params.length; i++) {
    const p = params[i];
    if (!Array.isArray(p)) continue;
    const literal = arrayLiteral(p);
    if (literal === null) continue;
    out ??= [...params];
    out[i] = literal;
  }
  return out ?? (params as unknown[]);
}
