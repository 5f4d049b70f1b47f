/**
 * The attribute merger (docs/profiles.md, "Trait merge rules"), pure.
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

import {
  cloneJson,
  deepEqual,
  escapeKey,
  isObject,
  type Json,
  type JsonObject,
  jsonBytes,
} from './json-values';

export { countTraitKeys, TOO_MANY_TRAIT_KEYS, TRAIT_LIMITS } from '../ingest';
// The merger's vocabulary lives in small files beside it; importers keep one entry point.
export * from './json-values';
export * from './trait-payload';
export * from './trait-types';

import { type Ctx, stamp, storedTime, subtreeTime, touch } from './trait-times';
import type { FieldChange, MergeResult, TraitState, TraitUpdate } from './trait-types';
import { PROFILE_FIELDS } from './trait-types';

/** When the incoming value at a path was written: one time for an event, per path for a profile merge. */
export type WriteTime = number | ((path: string) => number);

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
