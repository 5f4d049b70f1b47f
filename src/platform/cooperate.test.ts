import { describe, expect, it } from 'vitest';
import { createYielder, stringifyArray } from './cooperate';

const busy = (ms: number) => {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // CPU work that never awaits
  }
};

describe('cooperative scheduling', () => {
  it('lets a callback that arrived meanwhile run before a long stretch of work ends', async () => {
    const yieldNow = createYielder(5);
    let done = 0;
    let seenAt: number | null = null;
    setTimeout(() => {
      seenAt = done;
    }, 0);
    for (; done < 40; done++) {
      busy(1);
      await yieldNow();
    }
    expect(seenAt).not.toBeNull();
    expect(seenAt!).toBeLessThan(40);
  });

  it('does not give up its turn while the slice lasts', async () => {
    const yieldNow = createYielder(60_000);
    let ran = false;
    setImmediate(() => {
      ran = true;
    });
    for (let i = 0; i < 100; i++) await yieldNow();
    expect(ran).toBe(false);
  });

  it('serializes an array exactly as JSON.stringify does', async () => {
    const rows = [{ a: 1, b: [null, 'x'] }, { c: { d: '"\u00e9' } }, null, 3];
    expect(await stringifyArray(rows, createYielder())).toBe(JSON.stringify(rows));
    expect(await stringifyArray([], createYielder())).toBe('[]');
    expect(await stringifyArray([{ v: 1 }], createYielder(), (r) => ({ w: r.v }))).toBe('[{"w":1}]');
  });
});
