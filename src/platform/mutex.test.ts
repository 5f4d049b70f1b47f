import { describe, expect, it } from 'vitest';
import { createMutex } from './mutex';

const tick = () => new Promise((r) => setImmediate(r));

describe('createMutex', () => {
  it('hands the mutex to waiters in the order they asked', async () => {
    const mutex = createMutex();
    const order: number[] = [];
    const first = await mutex.acquire();
    const waiters = [1, 2, 3].map((n) =>
      mutex.acquire().then((release) => {
        order.push(n);
        release();
      }),
    );
    await tick();
    expect(order).toEqual([]);
    first();
    await Promise.all(waiters);
    expect(order).toEqual([1, 2, 3]);
  });

  it('lets one holder in at a time', async () => {
    const mutex = createMutex();
    let inside = 0;
    let most = 0;
    await Promise.all(
      Array.from({ length: 20 }, () =>
        mutex.runExclusive(async () => {
          most = Math.max(most, ++inside);
          await tick();
          inside--;
        }),
      ),
    );
    expect(most).toBe(1);
  });

  it('ignores a second release instead of releasing the next holder', async () => {
    const mutex = createMutex();
    const release = await mutex.acquire();
    let secondGotIt = false;
    let thirdGotIt = false;
    const second = mutex.acquire().then((r) => {
      secondGotIt = true;
      return r;
    });
    void mutex.acquire().then(() => {
      thirdGotIt = true;
    });
    release();
    const releaseSecond = await second;
    release();
    await tick();
    expect([secondGotIt, thirdGotIt]).toEqual([true, false]);
    releaseSecond();
    await tick();
    expect(thirdGotIt).toBe(true);
  });

  it('releases when the function run exclusively throws, and passes the error on', async () => {
    const mutex = createMutex();
    await expect(
      mutex.runExclusive(async () => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    await expect(
      mutex.runExclusive(() => {
        throw new Error('sync boom');
      }),
    ).rejects.toThrow('sync boom');
    expect(await mutex.runExclusive(() => 42)).toBe(42);
  });

  it('is free again once the last holder releases', async () => {
    const mutex = createMutex();
    (await mutex.acquire())();
    const release = await mutex.acquire();
    release();
    expect(await mutex.runExclusive(async () => 'again')).toBe('again');
  });
});
