import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ANALYTICS,
  createPriorityMutex,
  FOREGROUND,
  type Priority,
  type PriorityMutex,
  WORKER,
} from './priority-mutex';

const tick = () => new Promise((r) => setImmediate(r));

/** A waiter that, once served, writes its name down and lets the next one in. */
const waiter =
  (m: PriorityMutex, order: string[]) =>
  (name: string, p: Priority): Promise<void> =>
    m.acquire(p).then((release) => {
      order.push(name);
      release();
    });

describe('a priority mutex', () => {
  it('serves the foreground before the worker, and the worker before analytics, arrival order within each', async () => {
    const m = createPriorityMutex();
    const first = await m.acquire(ANALYTICS);
    const order: string[] = [];
    const wait = waiter(m, order);
    const all = [
      wait('a1', ANALYTICS),
      wait('w1', WORKER),
      wait('f1', FOREGROUND),
      wait('a2', ANALYTICS),
      wait('f2', FOREGROUND),
    ];
    await tick();
    first();
    await Promise.all(all);
    expect(order).toEqual(['f1', 'f2', 'w1', 'a1', 'a2']);
  });

  it('lets the two background lanes take turns while both wait, the foreground still first', async () => {
    const m = createPriorityMutex();
    const first = await m.acquire(WORKER);
    const order: string[] = [];
    const wait = waiter(m, order);
    const all = [
      wait('w1', WORKER),
      wait('w2', WORKER),
      wait('w3', WORKER),
      wait('a1', ANALYTICS),
      wait('a2', ANALYTICS),
      wait('f1', FOREGROUND),
    ];
    await tick();
    first();
    await Promise.all(all);
    // A worker held it last: the foreground, then analytics and the worker by turns, then the rest.
    expect(order).toEqual(['f1', 'a1', 'w1', 'a2', 'w2', 'w3']);
  });

  it('gives a background waiter past its promotion age one turn before the foreground, then the foreground again', async () => {
    let t = 0;
    const m = createPriorityMutex({ promoteAfterMs: 100, now: () => t });
    const first = await m.acquire(FOREGROUND);
    const order: string[] = [];
    const wait = waiter(m, order);
    const all = [wait('a1', ANALYTICS), wait('a2', ANALYTICS)];
    t = 150; // the analytics waiters are now old
    all.push(wait('f1', FOREGROUND), wait('f2', FOREGROUND));
    await tick();
    first();
    await Promise.all(all);
    expect(order).toEqual(['a1', 'f1', 'a2', 'f2']);
  });

  it('gives an analytics waiter past its promotion age a turn before a steady worker, with no foreground waiting', async () => {
    let t = 0;
    const m = createPriorityMutex({ promoteAfterMs: 100, now: () => t });
    const first = await m.acquire(WORKER);
    const order: string[] = [];
    const wait = waiter(m, order);
    const all = [wait('a1', ANALYTICS)];
    t = 150; // the analytics waiter is now old; the worker keeps queueing
    all.push(wait('w1', WORKER), wait('w2', WORKER));
    await tick();
    first();
    await Promise.all(all);
    expect(order).toEqual(['a1', 'w1', 'w2']);
  });

  it('lets one holder in at a time and serves every waiter, for any mix of priorities (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom<Priority>(0, 1, 2), { minLength: 1, maxLength: 30 }),
        async (ps) => {
          const m = createPriorityMutex({ promoteAfterMs: 0 });
          let inside = 0;
          let most = 0;
          let served = 0;
          await Promise.all(
            ps.map((p) =>
              m.runExclusive(async () => {
                inside++;
                most = Math.max(most, inside);
                await tick();
                inside--;
                served++;
              }, p),
            ),
          );
          expect(most).toBe(1);
          expect(served).toBe(ps.length);
          expect(m.waiting()).toEqual([0, 0, 0]);
        },
      ),
      { numRuns: 50 },
    );
  });
});
