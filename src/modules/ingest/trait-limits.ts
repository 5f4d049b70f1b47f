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
