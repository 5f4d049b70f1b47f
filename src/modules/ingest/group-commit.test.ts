import fc from 'fast-check';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { createGroupCommit, GroupCommitRefused } from './group-commit';

/** A flush whose commits the test completes by hand, recording what each flush carried. */
function manualStore() {
  const flushes: Array<{ items: number[]; done: (fail?: Error) => void }> = [];
  const flush = (items: number[]) =>
    new Promise<Array<number | Error>>((resolve, reject) => {
      flushes.push({
        items,
        done: (fail) => (fail ? reject(fail) : resolve(items.map((x) => x * 10))),
      });
    });
  return { flushes, flush };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('adaptive group commit', () => {
  it('flushes a lone item at once, without waiting for company', async () => {
    const store = manualStore();
    const gc = createGroupCommit({ flush: store.flush });
    const p = gc.submit(1);
    expect(store.flushes.map((f) => f.items)).toEqual([[1]]);
    store.flushes[0]!.done();
    await expect(p).resolves.toBe(10);
  });

  it('runs two flushes at once and makes everyone else join the next one', async () => {
    const store = manualStore();
    const gc = createGroupCommit({ flush: store.flush });
    const ps = [1, 2, 3, 4, 5].map((x) => gc.submit(x));
    expect(store.flushes.map((f) => f.items)).toEqual([[1], [2]]);
    store.flushes[0]!.done();
    await tick();
    expect(store.flushes.map((f) => f.items)).toEqual([[1], [2], [3, 4, 5]]);
    store.flushes[1]!.done();
    store.flushes[2]!.done();
    await expect(Promise.all(ps)).resolves.toEqual([10, 20, 30, 40, 50]);
    expect(gc.stats()).toMatchObject({ flushes: 3, items: 5, largestFlush: 3, inFlight: 0 });
  });

  it('answers no caller before its own flush has committed', async () => {
    const store = manualStore();
    const gc = createGroupCommit({ flush: store.flush, maxInFlight: 1 });
    let settled = false;
    void gc.submit(1).then(() => {
      settled = true;
    });
    await tick();
    expect(settled).toBe(false);
    store.flushes[0]!.done();
    await tick();
    expect(settled).toBe(true);
  });

  it('fails every caller of a failed flush, and only those', async () => {
    const store = manualStore();
    const gc = createGroupCommit({ flush: store.flush, maxInFlight: 1 });
    const first = gc.submit(1);
    const joined = [gc.submit(2), gc.submit(3)];
    store.flushes[0]!.done();
    await first;
    await tick();
    store.flushes[1]!.done(new Error('disk full'));
    for (const p of joined) await expect(p).rejects.toThrow('disk full');
    const after = gc.submit(4);
    store.flushes[2]!.done();
    await expect(after).resolves.toBe(40);
    expect(gc.stats().failedFlushes).toBe(1);
  });

  it('lets a flush fail one item without failing its neighbours', async () => {
    const gc = createGroupCommit<number, number>({
      flush: async (items) => items.map((x) => (x === 2 ? new Error('bad row') : x)),
      maxInFlight: 1,
    });
    const ps = [1, 2, 3].map((x) => gc.submit(x));
    await expect(ps[0]).resolves.toBe(1);
    await expect(ps[1]).rejects.toThrow('bad row');
    await expect(ps[2]).resolves.toBe(3);
  });

  it('never puts more than the batch weight into one flush, nor splits an item', async () => {
    const store = manualStore();
    const gc = createGroupCommit({
      flush: store.flush,
      maxInFlight: 1,
      maxBatchWeight: 10,
      weight: (x) => x,
    });
    const ps = [1, 6, 3, 4, 20, 1].map((x) => gc.submit(x));
    for (let i = 0; i < 4; i++) {
      store.flushes[i]!.done();
      await tick();
    }
    expect(store.flushes.map((f) => f.items)).toEqual([[1], [6, 3], [4], [20], [1]]);
    store.flushes[4]!.done();
    await Promise.all(ps);
  });

  it('refuses at once when too much is already waiting (overload), storing nothing', async () => {
    const store = manualStore();
    const gc = createGroupCommit({ flush: store.flush, maxInFlight: 1, maxQueuedWeight: 2 });
    const first = gc.submit(1); // running
    const a = gc.submit(2);
    const b = gc.submit(3);
    await expect(gc.submit(4)).rejects.toBeInstanceOf(GroupCommitRefused);
    store.flushes[0]!.done();
    await tick();
    store.flushes[1]!.done();
    await expect(Promise.all([first, a, b])).resolves.toEqual([10, 20, 30]);
    expect(store.flushes.flatMap((f) => f.items)).not.toContain(4);
  });

  it('refuses items that waited too long for a flush to start (a hung database), storing none of them', async () => {
    // The wait is timed on an injected clock: 30 ms pass when the test says so, not when they do.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    onTestFinished(() => {
      vi.useRealTimers();
    });
    const store = manualStore();
    const gc = createGroupCommit({ flush: store.flush, maxInFlight: 1, maxWaitMs: 30 });
    const first = gc.submit(1); // its flush hangs, like an INSERT on a dead connection
    const waiting = [gc.submit(2), gc.submit(3)].map((p) =>
      p.then(
        () => 'stored',
        (e: unknown) => e,
      ),
    );
    await vi.advanceTimersByTimeAsync(29);
    expect(gc.stats()).toMatchObject({ expired: 0, queuedWeight: 2 });
    await vi.advanceTimersByTimeAsync(1);
    for (const outcome of await Promise.all(waiting))
      expect(outcome).toMatchObject({ name: 'GroupCommitRefused', reason: 'timeout' });
    expect(gc.stats()).toMatchObject({ expired: 2, queuedWeight: 0 });
    // The running flush is not cut short (its outcome is unknown until it ends).
    store.flushes[0]!.done();
    await expect(first).resolves.toBe(10);
    expect(store.flushes.map((f) => f.items)).toEqual([[1]]);
    const later = gc.submit(4);
    store.flushes[1]!.done();
    await expect(later).resolves.toBe(40);
    await gc.close();
  });

  it('on close, refuses new items but commits everything already accepted', async () => {
    const store = manualStore();
    const gc = createGroupCommit({ flush: store.flush, maxInFlight: 1 });
    const accepted = [gc.submit(1), gc.submit(2)];
    let closed = false;
    const closing = gc.close().then(() => {
      closed = true;
    });
    await expect(gc.submit(3)).rejects.toThrow('closed');
    store.flushes[0]!.done();
    await tick();
    expect(closed).toBe(false);
    store.flushes[1]!.done();
    await closing;
    expect(closed).toBe(true);
    await expect(Promise.all(accepted)).resolves.toEqual([10, 20]);
  });

  it('answers every item exactly once with its own result, whatever the timing (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 1, max: 5 }), { minLength: 1, maxLength: 60 }),
        fc.integer({ min: 1, max: 3 }),
        fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 20 }),
        async (weights, maxInFlight, delays) => {
          let running = 0;
          let maxRunning = 0;
          let flushNo = 0;
          const seen: number[] = [];
          const gc = createGroupCommit<number, number>({
            maxInFlight,
            maxBatchWeight: 8,
            weight: (i) => weights[i]!,
            async flush(items) {
              running++;
              maxRunning = Math.max(maxRunning, running);
              const total = items.reduce((s, i) => s + weights[i]!, 0);
              if (items.length > 1 && total > 8) throw new Error('batch over weight');
              const d = delays[flushNo++ % delays.length]!;
              for (let k = 0; k < d; k++) await tick();
              seen.push(...items);
              running--;
              return items.map((i) => i * 2);
            },
          });
          const results = await Promise.all(weights.map((_, i) => gc.submit(i)));
          expect(results).toEqual(weights.map((_, i) => i * 2));
          expect([...seen].sort((a, b) => a - b)).toEqual(weights.map((_, i) => i));
          expect(maxRunning).toBeLessThanOrEqual(maxInFlight);
        },
      ),
      { numRuns: 100 },
    );
  });
});
