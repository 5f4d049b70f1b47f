/**
 * Work bounded in time, not in rows: a walk over a workspace (a segment's evaluation, a
 * calculation on the embedded database) takes slices whose size follows the time the last one
 * took towards a target, so a slice costs about the target whatever the query (a cheap trait
 * filter takes large slices, a payload filter over many events small ones). On PGlite the target is
 * the longest anything else waits for the single connection behind one slice.
 */
export interface SliceBounds {
  /** The time a slice should take. */
  targetMs: number;
  /** Fewest and most rows per slice. */
  min: number;
  max: number;
}

/**
 * The size of the next slice after one of `size` rows took `elapsedMs`: scaled by target/elapsed,
 * growing at most twofold per step (a lucky fast slice must not overshoot), shrinking at once, and
 * kept within the bounds. Pure.
 */
export function nextSliceSize(size: number, elapsedMs: number, b: SliceBounds): number {
  const ratio = Math.min(2, b.targetMs / Math.max(0.05, elapsedMs));
  return Math.round(Math.min(b.max, Math.max(b.min, size * ratio)));
}

/** Remembers the last slice size per key (a workspace), so the next walk starts where the last one ended. */
export interface SliceSizer {
  size(key: string): number;
  record(key: string, size: number, elapsedMs: number): void;
}

export function createSliceSizer(b: SliceBounds & { initial: number }, maxKeys = 10_000): SliceSizer {
  const sizes = new Map<string, number>();
  return {
    size: (key) => sizes.get(key) ?? b.initial,
    record(key, size, elapsedMs) {
      sizes.delete(key);
      // Bounded memory: the key used longest ago goes first (a Map keeps insertion order).
      if (sizes.size >= maxKeys) sizes.delete(sizes.keys().next().value!);
      sizes.set(key, nextSliceSize(size, elapsedMs, b));
    },
  };
}

/** One walk's view of a sizer: the size of its next slice, and what the last one took. */
export interface Slicer {
  size(): number;
  record(size: number, elapsedMs: number): void;
}

/** The walk of `key` (a workspace) over `sizer`. */
export function slicerFor(sizer: SliceSizer, key: string): Slicer {
  return { size: () => sizer.size(key), record: (size, ms) => sizer.record(key, size, ms) };
}
