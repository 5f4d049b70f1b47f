import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { partitionByOrder, type Sequenced } from './ordering';

const batch = fc
  .uniqueArray(
    fc.record({
      seq: fc.nat({ max: 200 }),
      tokens: fc.uniqueArray(fc.constantFrom<string>('a', 'b', 'c', 'd', 'e', 'f'), { maxLength: 2 }),
    }),
    { selector: (e) => e.seq, maxLength: 30 },
  )
  .chain((all) =>
    fc.tuple(fc.constant(all), fc.array(fc.boolean(), { minLength: all.length, maxLength: all.length })),
  )
  .map(([all, mineFlags]) => ({
    mine: all.filter((_, i) => mineFlags[i]),
    pending: all.filter((_, i) => !mineFlags[i]),
  }));

describe('ordering across workers', () => {
  it('lets an event through only when no older waiting event shares a token with it', () => {
    const mine = [
      { seq: 1, tokens: ['a'] },
      { seq: 3, tokens: ['b'] },
      { seq: 4, tokens: ['b', 'c'] },
      { seq: 5, tokens: ['c'] },
      { seq: 6, tokens: ['d'] },
    ];
    const { ready, deferred } = partitionByOrder(mine, [
      { seq: 2, tokens: ['b'] },
      { seq: 9, tokens: ['d'] },
    ]);
    expect(ready.map((e) => e.seq)).toEqual([1, 6]);
    expect(deferred.map((e) => e.seq)).toEqual([3, 4, 5]);
  });

  it('never applies an event while an older event of the same person waits, and never holds anything back without a reason', () => {
    fc.assert(
      fc.property(batch, ({ mine, pending }) => {
        const { ready, deferred } = partitionByOrder(mine, pending);
        expect(ready.length + deferred.length).toBe(mine.length);
        const waiting: Sequenced[] = [...pending, ...deferred];
        for (const r of ready) {
          for (const w of waiting)
            if (w.seq < r.seq) expect(w.tokens.some((t) => r.tokens.includes(t))).toBe(false);
        }
        // An event waits only behind an older waiting event it shares a token with.
        for (const d of deferred) {
          expect(waiting.some((w) => w.seq < d.seq && w.tokens.some((t) => d.tokens.includes(t)))).toBe(true);
        }
      }),
    );
  });
});
