/** JSON values as profiles store them, and the few operations the trait merger needs on them. */

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export const escapeKey = (k: string): string =>
  k.includes('~') || k.includes('/') ? k.replace(/~/g, '~0').replace(/\//g, '~1') : k;
export const pointer = (...keys: string[]): string => keys.map((k) => `/${escapeKey(k)}`).join('');

export const isObject = (v: unknown): v is JsonObject =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

export function deepEqual(a: Json | undefined, b: Json | undefined): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!deepEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  for (const k of ka) if (!Object.hasOwn(b, k) || !deepEqual(a[k], b[k])) return false;
  return true;
}

/** A copy with `__proto__` keys dropped: they cannot be stored safely as plain properties. */
export function cloneJson(v: Json): Json {
  if (Array.isArray(v)) return v.map(cloneJson);
  if (isObject(v)) {
    const out: JsonObject = {};
    for (const [k, x] of Object.entries(v)) if (k !== '__proto__' && x !== undefined) out[k] = cloneJson(x);
    return out;
  }
  return v;
}

/** UTF-8 bytes of a value as JSON: what a profile's attributes size limit counts. */
export function jsonBytes(v: Json): number {
  if (typeof v === 'number') return Number.isFinite(v) ? String(v).length : 4;
  if (typeof v === 'boolean') return v ? 4 : 5;
  if (v === null) return 4;
  return Buffer.byteLength(JSON.stringify(v));
}
