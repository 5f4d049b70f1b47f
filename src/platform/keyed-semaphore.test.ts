import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createKeyedSemaphore } from './keyed-semaphore';

describe('a keyed semaphore', () => {
  it('gives each key its own limit of slots and refuses one more, without waiting', () => {
    const s = createKeyedSemaphore();
    const a1 = s.tryAcquire('a', 2);
    const a2 = s.tryAcquire('a', 2);
    expect(a1 && a2).toBeTruthy();
    expect(s.tryAcquire('a', 2)).toBeNull();
    expect(s.tryAcquire('b', 2)).not.toBeNull();
    a1!();
    expect(s.tryAcquire('a', 2)).not.toBeNull();
  });

  it('counts a release once however often it is called', () => {
    const s = createKeyedSemaphore();
    const r = s.tryAcquire('a', 1)!;
    r();
    r();
    expect(s.held('a')).toBe(0);
    expect(s.tryAcquire('a', 1)).not.toBeNull();
    expect(s.tryAcquire('a', 1)).toBeNull();
  });

  it('never holds more than the limit for any sequence of takes and releases (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), fc.constantFrom('a', 'b')), { maxLength: 60 }), (ops) => {
        const s = createKeyedSemaphore();
        const held: Record<string, Array<() => void>> = { a: [], b: [] };
        for (const [take, key] of ops) {
          if (take) {
            const r = s.tryAcquire(key, 3);
            expect(r === null).toBe(held[key]!.length >= 3);
            if (r) held[key]!.push(r);
          } else held[key]!.pop()?.();
          expect(s.held(key)).toBe(held[key]!.length);
        }
      }),
    );
  });
});
