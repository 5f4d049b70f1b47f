import { escapeKey, isObject, type Json, type JsonObject } from './json-values';
import type { FieldChange, FieldTimes } from './trait-types';

/** The merger's bookkeeping of write times per JSON pointer (traits.ts), kept beside its rules. */

/**
 * One merge in progress: the field times it updates and the changes it records.
 *
 * Cost is linear in the size of the write, not of the profile: every path is looked up in
 * `field_times` by key, and the times under a path (needed only when an object is replaced) are
 * found by walking that object, because the merger records times only at object keys it descended
 * through. (Scanning the whole map for every changed path made a 20,000-key write take 18 s.)
 */
export interface Ctx {
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

export const storedTime = (m: Ctx, path: string, inherited: number): number => m.times[path] ?? inherited;

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
export function subtreeTime(m: Ctx, cur: Json, path: string, inherited: number): number {
  let max = storedTime(m, path, inherited);
  if (isObject(cur))
    eachTimeUnder(m, cur, path, (_, t) => {
      if (t > max) max = t;
    });
  return max;
}

/** Records `t` at `path`, forgetting the times under it (its subtree, `cur`, is being replaced). */
export function stamp(m: Ctx, cur: Json | undefined, path: string, t: number): void {
  if (cur !== undefined && isObject(cur)) {
    const under: string[] = [];
    eachTimeUnder(m, cur, path, (p) => under.push(p));
    for (const p of under) setTime(m, p, undefined);
  }
  setTime(m, path, t);
  m.timesMoved = true;
}

/** Raises the recorded time without changing the value (an equal or combining write). */
export function touch(m: Ctx, path: string, t: number, inherited: number): void {
  if (t > storedTime(m, path, inherited)) {
    setTime(m, path, t);
    m.timesMoved = true;
  }
}
