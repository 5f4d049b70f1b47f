/**
 * The attribute merger (spec "Attribute merging rules" + contract §5), pure.
 *
 * Rules, at every key of the incoming document (E = existing value, I = incoming value, t = time of
 * the incoming write, T = time of the stored write at that path):
 *  1. key absent on the profile → added.
 *  2. array onto array → replaced, if t > T (a late event never overwrites a newer array).
 *  3. scalar onto array → appended, unless already present (so a re-sent event adds nothing).
 *  4. array onto scalar → `[E, ...I]` (E left out if I already holds it).
 *  5. object onto object → merged key by key with these same rules.
 *  6. scalar onto scalar → the newer write wins: replaced only if t > T.
 *  7. null, and any other change of shape (object ↔ scalar/array) → replaced, if t is newer than
 *     everything stored under that path.
 * `email`, `first_name` and `last_name` are scalar fields under rule 6.
 *
 * T comes from `field_times`: JSON pointer (`/attributes/plan/tier`) → epoch ms of the write that set
 * it; a path without its own entry inherits its nearest ancestor's. Ties keep the stored value, which
 * makes applying the same write twice exactly the same as applying it once.
 *
 * The result carries every field-level change `{path, old, new}` for the lineage trail; a merge that
 * changes nothing yields no change.
 */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };
/** JSON pointer → epoch milliseconds of the write that last set the value there. */
export type FieldTimes = Record<string, number>;

export const PROFILE_FIELDS = ['email', 'first_name', 'last_name'] as const;
export type ProfileField = (typeof PROFILE_FIELDS)[number];

export interface TraitState {
  email: string | null;
  first_name: string | null;
  last_name: string | null;
  attributes: JsonObject;
  field_times: FieldTimes;
}

export interface TraitUpdate {
  email?: string | null;
  first_name?: string | null;
  last_name?: string | null;
  attributes?: JsonObject;
}

export interface FieldChange {
  path: string;
  old: Json;
  new: Json;
}

export interface MergeResult {
  /** The very same object as the input when neither a value nor a recorded time changed. */
  state: TraitState;
  changes: FieldChange[];
}

/** When the incoming value at a path was written: one time for an event, per path for a profile merge. */
export type WriteTime = number | ((path: string) => number);

const escapeKey = (k: string): string => k.replace(/~/g, '~0').replace(/\//g, '~1');
export const pointer = (...keys: string[]): string => keys.map((k) => `/${escapeKey(k)}`).join('');

const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

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
function cloneJson(v: Json): Json {
  if (Array.isArray(v)) return v.map(cloneJson);
  if (isObject(v)) {
    const out: JsonObject = {};
    for (const [k, x] of Object.entries(v)) if (k !== '__proto__' && x !== undefined) out[k] = cloneJson(x);
    return out;
  }
  return v;
}

/** One merge in progress: the field times it updates and the changes it records. */
interface Ctx {
  times: FieldTimes;
  timeOf: (path: string) => number;
  changes: FieldChange[];
  /** Set when a recorded time moved (a write can raise a time without changing a value). */
  timesMoved: boolean;
}

const storedTime = (m: Ctx, path: string, inherited: number): number => m.times[path] ?? inherited;

/** The newest write anywhere at or under `path`: what a shape change must beat. */
function subtreeTime(m: Ctx, path: string, inherited: number): number {
  let max = storedTime(m, path, inherited);
  const prefix = `${path}/`;
  for (const [p, t] of Object.entries(m.times)) if (t > max && p.startsWith(prefix)) max = t;
  return max;
}

/** Records `t` at `path`, forgetting the times under it (its subtree is being replaced). */
function stamp(m: Ctx, path: string, t: number): void {
  const prefix = `${path}/`;
  for (const p of Object.keys(m.times)) if (p.startsWith(prefix)) delete m.times[p];
  m.times[path] = t;
  m.timesMoved = true;
}

/** Raises the recorded time without changing the value (an equal or combining write). */
function touch(m: Ctx, path: string, t: number, inherited: number): void {
  if (t > storedTime(m, path, inherited)) {
    m.times[path] = t;
    m.timesMoved = true;
  }
}

/** Merges `incoming` into `existing`; returns `existing` itself when nothing changed. */
function mergeObject(m: Ctx, existing: JsonObject, incoming: JsonObject, base: string, inherited: number) {
  let out: JsonObject | null = null;
  for (const key of Object.keys(incoming)) {
    if (key === '__proto__') continue;
    const inc = incoming[key];
    if (inc === undefined) continue;
    const path = `${base}/${escapeKey(key)}`;
    const cur = Object.hasOwn(existing, key) ? existing[key] : undefined;
    const next = mergeValue(m, cur, inc, path, inherited);
    if (next !== cur) {
      out ??= { ...existing };
      out[key] = next;
    }
  }
  return out ?? existing;
}

/** The merged value at one path; the very same `cur` when unchanged. */
function mergeValue(m: Ctx, cur: Json | undefined, inc: Json, path: string, inherited: number): Json {
  const t = m.timeOf(path);
  if (cur === undefined) {
    const value = cloneJson(inc);
    stamp(m, path, t);
    m.changes.push({ path, old: null, new: value });
    return value;
  }
  if (isObject(cur) && isObject(inc)) return mergeObject(m, cur, inc, path, storedTime(m, path, inherited));
  if (Array.isArray(inc) && Array.isArray(cur)) return replace(m, cur, inc, path, t, inherited);
  if (Array.isArray(inc) && cur !== null && !isObject(cur)) {
    const next = inc.some((x) => deepEqual(x, cur)) ? inc : [cur, ...inc];
    return combine(m, cur, cloneJson(next), path, t, inherited);
  }
  if (Array.isArray(cur) && inc !== null && !isObject(inc)) {
    if (cur.some((x) => deepEqual(x, inc))) {
      touch(m, path, t, inherited);
      return cur;
    }
    return combine(m, cur, [...cur, inc], path, t, inherited);
  }
  return replace(m, cur, inc, path, t, inherited);
}

/** Overwrite, only by a strictly newer write than anything stored at or under the path. */
function replace(m: Ctx, cur: Json, inc: Json, path: string, t: number, inherited: number): Json {
  const newest = isObject(cur) ? subtreeTime(m, path, inherited) : storedTime(m, path, inherited);
  if (!(t > newest)) return cur;
  if (deepEqual(cur, inc)) {
    touch(m, path, t, inherited);
    return cur;
  }
  const value = cloneJson(inc);
  stamp(m, path, t);
  m.changes.push({ path, old: cur, new: value });
  return value;
}

/** Rules 3 and 4 combine rather than overwrite, so they apply whatever the times. */
function combine(m: Ctx, cur: Json, next: Json, path: string, t: number, inherited: number): Json {
  touch(m, path, t, inherited);
  m.changes.push({ path, old: cur, new: next });
  return next;
}

const toTimeFn = (time: WriteTime): ((path: string) => number) =>
  typeof time === 'number' ? () => time : time;

/** Applies one write (an identify event's traits, an API update, a merged profile) to a profile. */
export function mergeTraits(state: TraitState, update: TraitUpdate, time: WriteTime): MergeResult {
  const m: Ctx = { times: { ...state.field_times }, timeOf: toTimeFn(time), changes: [], timesMoved: false };
  const next: TraitState = { ...state, field_times: m.times };
  for (const field of PROFILE_FIELDS) {
    const inc = update[field];
    if (inc === undefined) continue;
    const path = `/${field}`;
    // Profile fields are plain columns: always scalar onto scalar (rule 6), an absent value included.
    next[field] = replace(m, state[field], inc, path, m.timeOf(path), Number.NEGATIVE_INFINITY) as
      | string
      | null;
  }
  if (update.attributes && isObject(update.attributes)) {
    const attributes = mergeObject(
      m,
      state.attributes,
      update.attributes,
      '/attributes',
      Number.NEGATIVE_INFINITY,
    );
    next.attributes = attributes;
  }
  if (m.changes.length === 0 && !m.timesMoved) return { state, changes: [] };
  return { state: next, changes: m.changes };
}

export const emptyTraits = (): TraitState => ({
  email: null,
  first_name: null,
  last_name: null,
  attributes: {},
  field_times: {},
});

/**
 * Splits an identify payload into profile fields and attributes (contract §4): `email`,
 * `first_name`, `last_name` set the fields (a number or boolean is kept as its text; an object or
 * array cannot be a name, so it stays an attribute); every other key is an attribute.
 */
export function traitsFromPayload(payload: Readonly<Record<string, unknown>>): TraitUpdate {
  const update: TraitUpdate = {};
  const attributes: JsonObject = {};
  for (const [key, value] of Object.entries(payload)) {
    if (value === undefined || key === '__proto__') continue;
    if ((PROFILE_FIELDS as readonly string[]).includes(key)) {
      const field = key as ProfileField;
      if (value === null || typeof value === 'string') {
        update[field] = typeof value === 'string' && field === 'email' ? value.trim().toLowerCase() : value;
        continue;
      }
      if (typeof value === 'number' || typeof value === 'boolean') {
        update[field] = String(value);
        continue;
      }
    }
    attributes[key] = value as Json;
  }
  if (Object.keys(attributes).length > 0) update.attributes = attributes;
  return update;
}

/**
 * The write time of each path of a profile being merged away: its own field times, inherited by
 * ancestor, falling back to when the profile was last updated.
 */
export function timesOfProfile(fieldTimes: FieldTimes, fallback: number): (path: string) => number {
  return (path) => {
    let p = path;
    for (;;) {
      const t = fieldTimes[p];
      if (t !== undefined) return t;
      const cut = p.lastIndexOf('/');
      if (cut <= 0) return fallback;
      p = p.slice(0, cut);
    }
  };
}
