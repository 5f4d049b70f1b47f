import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createSliceSizer, nextSliceSize, slicerFor } from './slices';

const B = { targetMs: 10, min: 1, max: 50_000 };

describe('the size of the next slice', () => {
  it('shrinks at once to what fits the target, and grows at most twofold', () => {
    expect(nextSliceSize(2000, 1000, B)).toBe(20); // 100× too slow: a hundredth
    expect(nextSliceSize(100, 1, B)).toBe(200); // 10× too fast: only doubled
    expect(nextSliceSize(100, 10, B)).toBe(100);
  });

  it('stays within its bounds, and converges on the target for a cost proportional to the rows (property)', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0.001, max: 100, noNaN: true }), // ms per row
        fc.integer({ min: 1, max: 50_000 }),
        (msPerRow, start) => {
          let size = start;
          for (let i = 0; i < 40; i++) {
            size = nextSliceSize(size, size * msPerRow, B);
            expect(size).toBeGreaterThanOrEqual(B.min);
            expect(size).toBeLessThanOrEqual(B.max);
          }
          const ideal = Math.min(B.max, Math.max(B.min, B.targetMs / msPerRow));
          // Within rounding of the ideal size (or its bound).
          expect(Math.abs(size - ideal)).toBeLessThanOrEqual(Math.max(1, ideal * 0.05));
        },
      ),
    );
  });
});

describe('a slice sizer', () => {
  it('remembers each key’s size and forgets the oldest key past its capacity', () => {
    const s = createSliceSizer({ ...B, initial: 500 }, 2);
    expect(s.size('a')).toBe(500);
    s.record('a', 500, 100); // 10× too slow
    expect(s.size('a')).toBe(50);
    s.record('b', 500, 10);
    s.record('c', 500, 10);
    expect(s.size('a')).toBe(500); // forgotten
    expect(s.size('c')).toBe(500);
  });
});

describe('a walk’s slicer', () => {
  it('reads and records its own key’s size only', () => {
    const s = createSliceSizer({ ...B, initial: 500 });
    const a = slicerFor(s, 'a');
    a.record(a.size(), 100); // 10× too slow
    expect(a.size()).toBe(50);
    expect(slicerFor(s, 'b').size()).toBe(500);
  });
});
