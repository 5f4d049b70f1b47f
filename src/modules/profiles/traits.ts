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
  /**
   * Bytes the attributes grew as JSON (negative when they shrank): `jsonBytes` after − before, plus
   * one byte for each object that was empty before the write and gained keys (an upper bound that
   * costs nothing to keep; measure the attributes when the exact size matters).
   */
  growth: number;
}

/**
 * Limits that keep every trait write, and so every merge, small (docs/profiles.md, "Limits"): a write
 * costs time in proportion to its keys, and each changed key is a lineage row.
 */
export const TRAIT_LIMITS = {
  /** Keys of one write (an identify payload, a profile update), nested keys included. */
  keysPerWrite: 1000,
  /** Levels of nested objects and arrays in one write (checked by the profile API and the ingest rules). */
  depth: 10,
  /** A profile's attributes as JSON, in UTF-8 bytes. */
  profileAttributesBytes: 256 * 1024,
} as const;

export const TOO_MANY_TRAIT_KEYS = `must hold at most ${TRAIT_LIMITS.keysPerWrite} trait keys, nested keys included (limit: trait keys per write)`;

/**
 * Counts the object keys of a value at every depth (inside arrays too); stops counting once past
 * `max`, so a huge value costs no more than the limit it breaks.
 */
export function countTraitKeys(value: unknown, max = Number.POSITIVE_INFINITY): number {
  let count = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v !== 'object' || v === null) continue;
    if (Array.isArray(v)) {
      for (const x of v) if (typeof x === 'object' && x !== null) stack.push(x);
      continue;
    }
    const keys = Object.keys(v);
    count += keys.length;
    if (count > max) return count;
    for (const k of keys) {
      const x = (v as Record<string, unknown>)[k];
      if (typeof x === 'object' && x !== null) stack.push(x);
    }
  }
  return count;
}

/** When the incoming value at a path was written: one time for an event, per path for a profile merge. */
export type WriteTime = number | ((path: string) => number);

const escapeKey = (k: string): string =>
  k.includes('~') || k.includes('/') ? k.replace(/~/g, '~0').replace(/\//g, '~1') : k;
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

/**
 * One merge in progress: the field times it updates and the changes it records.
 *
 * Cost is linear in the size of the write, not of the profile: every path is looked up in
 * `field_times` by key, and the times under a path (needed only when an object is replaced) are
 * found by walking that object, because the merger records times only at object keys it descended
 * through. (Scanning the whole map for every changed path made a 20,000-key write take 18 s.)
 */
interface Ctx {
  times: FieldTimes;
  timeOf: (path: string) => number;
  changes: FieldChange[];
  /** Set when a recorded time moved (a write can raise a time without changing a value). */
  timesMoved: boolean;
  /**
   * In place (the caller owns the state): how to put back each write, in order. Null for the pure
   * merge, which copies what it changes instead.
   */
  undo: Array<() => void> | null;
  /** How many bytes `attributes` grew as JSON (negative when it shrank), see MergeResult.growth. */
  growth: number;
}

/** UTF-8 bytes of a value as JSON: what a profile's attributes size limit counts. */
export function jsonBytes(v: Json): number {
  if (typeof v === 'number') return Number.isFinite(v) ? String(v).length : 4;
  if (typeof v === 'boolean') return v ? 4 : 5;
  if (v === null) return 4;
  return Buffer.byteLength(JSON.stringify(v));
}

const storedTime = (m: Ctx, path: string, inherited: number): number => m.times[path] ?? inherited;

function setTime(m: Ctx, path: string, t: number | undefined): void {
  const times = m.times;
  if (m.undo) {
    const before = times[path];
    m.undo.push(() => {
      if (before === undefined) delete times[path];
      else times[path] = before;
    });
  }
  if (t === undefined) delete times[path];
  else times[path] = t;
}

/** Calls `fn` for each time recorded under `path`, whose value is the object `value`. */
function eachTimeUnder(m: Ctx, value: JsonObject, path: string, fn: (p: string, t: number) => void): void {
  for (const key of Object.keys(value)) {
    const child = `${path}/${escapeKey(key)}`;
    const t = m.times[child];
    if (t !== undefined) fn(child, t);
    const v = value[key];
    if (isObject(v)) eachTimeUnder(m, v, child, fn);
  }
}

/** The newest write anywhere at or under `path`: what a shape change must beat. */
function subtreeTime(m: Ctx, cur: Json, path: string, inherited: number): number {
  let max = storedTime(m, path, inherited);
  if (isObject(cur))
    eachTimeUnder(m, cur, path, (_, t) => {
      if (t > max) max = t;
    });
  return max;
}

/** Records `t` at `path`, forgetting the times under it (its subtree, `cur`, is being replaced). */
function stamp(m: Ctx, cur: Json | undefined, path: string, t: number): void {
  if (cur !== undefined && isObject(cur)) {
    const under: string[] = [];
    eachTimeUnder(m, cur, path, (p) => under.push(p));
    for (const p of under) setTime(m, p, undefined);
  }
  setTime(m, path, t);
  m.timesMoved = true;
}

/** Raises the recorded time without changing the value (an equal or combining write). */
function touch(m: Ctx, path: string, t: number, inherited: number): void {
  if (t > storedTime(m, path, inherited)) {
    setTime(m, path, t);
    m.timesMoved = true;
  }
}

/**
 * A value as it goes into a change record. In place, an object stored in the profile may later be
 * merged into by another write of the same batch; the change record keeps its own copy.
 */
const recorded = (m: Ctx, v: Json): Json => (m.undo && isObject(v) ? cloneJson(v) : v);

/** Merges `incoming` into `existing`; returns `existing` itself when nothing changed (or in place). */
function mergeObject(m: Ctx, existing: JsonObject, incoming: JsonObject, base: string, inherited: number) {
  let out: JsonObject | null = null;
  for (const key of Object.keys(incoming)) {
    if (key === '__proto__') continue;
    const inc = incoming[key];
    if (inc === undefined) continue;
    const path = `${base}/${escapeKey(key)}`;
    const cur = Object.hasOwn(existing, key) ? existing[key] : undefined;
    const next = mergeValue(m, cur, inc, path, inherited);
    if (next === cur) continue;
    // `,"key":value`; the comma is counted even for an object's first key: knowing whether an object
    // is empty would cost time in proportion to its keys (V8 lists them all), this costs one byte.
    if (cur === undefined) m.growth += 1 + jsonBytes(key) + 1 + jsonBytes(next);
    if (m.undo) {
      const target = existing;
      m.undo.push(() => {
        if (cur === undefined) delete target[key];
        else target[key] = cur;
      });
      existing[key] = next;
    } else {
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
    stamp(m, cur, path, t);
    m.changes.push({ path, old: null, new: recorded(m, value) });
    return value;
  }
  if (isObject(cur) && isObject(inc)) return mergeObject(m, cur, inc, path, storedTime(m, path, inherited));
  if (Array.isArray(inc) && Array.isArray(cur)) return replace(m, cur, inc, path, t, inherited);
  if (Array.isArray(inc) && cur !== null && !isObject(cur)) {
    const next = inc.some((x) => deepEqual(x, cur)) ? inc : [cur, ...inc];
    const value = cloneJson(next);
    m.growth += jsonBytes(value) - jsonBytes(cur);
    return combine(m, cur, value, path, t, inherited);
  }
  if (Array.isArray(cur) && inc !== null && !isObject(inc)) {
    if (cur.some((x) => deepEqual(x, inc))) {
      touch(m, path, t, inherited);
      return cur;
    }
    m.growth += (cur.length > 0 ? 1 : 0) + jsonBytes(inc);
    return combine(m, cur, [...cur, inc], path, t, inherited);
  }
  return replace(m, cur, inc, path, t, inherited);
}

/** Overwrite, only by a strictly newer write than anything stored at or under the path. */
function replace(m: Ctx, cur: Json, inc: Json, path: string, t: number, inherited: number): Json {
  if (!(t > subtreeTime(m, cur, path, inherited))) return cur;
  if (deepEqual(cur, inc)) {
    touch(m, path, t, inherited);
    return cur;
  }
  const value = cloneJson(inc);
  stamp(m, cur, path, t);
  m.growth += jsonBytes(value) - jsonBytes(cur);
  m.changes.push({ path, old: cur, new: recorded(m, value) });
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

/** Runs one write into `next` (the state itself in place, else a copy of it). */
function applyWrite(m: Ctx, state: TraitState, next: TraitState, update: TraitUpdate): void {
  for (const field of PROFILE_FIELDS) {
    const inc = update[field];
    if (inc === undefined) continue;
    const path = `/${field}`;
    const cur = state[field];
    // Profile fields are plain columns: always scalar onto scalar (rule 6), an absent value included.
    const value = replace(m, cur, inc, path, m.timeOf(path), Number.NEGATIVE_INFINITY) as string | null;
    if (value === cur) continue;
    if (m.undo) m.undo.push(() => (next[field] = cur));
    next[field] = value;
  }
  // Only the attributes count towards their size (the fields are columns of their own).
  m.growth = 0;
  if (update.attributes && isObject(update.attributes)) {
    next.attributes = mergeObject(
      m,
      state.attributes,
      update.attributes,
      '/attributes',
      Number.NEGATIVE_INFINITY,
    );
  }
}

/** Applies one write (an identify event's traits, an API update, a merged profile) to a profile. */
export function mergeTraits(state: TraitState, update: TraitUpdate, time: WriteTime): MergeResult {
  const m: Ctx = {
    times: { ...state.field_times },
    timeOf: toTimeFn(time),
    changes: [],
    timesMoved: false,
    undo: null,
    growth: 0,
  };
  const next: TraitState = { ...state, field_times: m.times };
  applyWrite(m, state, next, update);
  if (m.changes.length === 0 && !m.timesMoved) return { state, changes: [], growth: 0 };
  return { state: next, changes: m.changes, growth: m.growth };
}

export interface InPlaceMergeResult {
  changes: FieldChange[];
  /** True when a value or a recorded time changed. */
  moved: boolean;
  /** As MergeResult.growth. */
  growth: number;
  /** Puts the state back exactly as it was before this write. */
  revert(): void;
}

/**
 * mergeTraits for a caller that owns `state` (every object in it, and `field_times`): the write
 * changes it in place, so its cost is that of the write alone, never a copy of a big profile. Values
 * in `changes` are the caller's to keep: later writes never alter them.
 */
export function mergeTraitsInPlace(
  state: TraitState,
  update: TraitUpdate,
  time: WriteTime,
): InPlaceMergeResult {
  const undo: Array<() => void> = [];
  const m: Ctx = {
    times: state.field_times,
    timeOf: toTimeFn(time),
    changes: [],
    timesMoved: false,
    undo,
    growth: 0,
  };
  applyWrite(m, state, state, update);
  return {
    changes: m.changes,
    moved: m.changes.length > 0 || m.timesMoved,
    growth: m.growth,
    revert() {
      for (let i = undo.length - 1; i >= 0; i--) undo[i]!();
      undo.length = 0;
    },
  };
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
