import type { Mutex } from './mutex';

/**
 * A mutex whose waiters are served by priority: what one resource (PGlite's single connection)
 * owes the requests that a person or a client is waiting for right now before work that can wait.
 *
 *   0  foreground: API requests (ingest's commits, reads, writes, authentication)
 *   1  worker: event processing and the jobs that deliver (webhooks)
 *   2  analytics: whole-workspace walks (calculations, segment refreshes, model fits)
 *
 * Within a priority, arrival order. The two background lanes take turns: when both wait (and no
 * foreground does), the lane not served last goes first, so a calculation's slices and the event
 * pipeline's batches alternate instead of every slice waiting out the whole backlog (a calculation
 * of 20 slices behind a busy pipeline took its whole 10 s budget, one promotion age per slice). A
 * background waiter (priority > 0) that has waited longer than `promoteAfterMs` is served before
 * every higher priority, one at a time: after a promoted waiter the order by priority holds again
 * for one turn. So a foreground waiter waits at most for the holder and one promoted slice, and
 * neither a steady foreground nor a steady worker starves the analytics lane.
 */
export type Priority = 0 | 1 | 2;
export const FOREGROUND: Priority = 0;
export const WORKER: Priority = 1;
export const ANALYTICS: Priority = 2;

export interface PriorityMutex {
  acquire(priority?: Priority): Promise<() => void>;
  runExclusive<T>(fn: () => T | Promise<T>, priority?: Priority): Promise<T>;
  /** Waiters per priority now. */
  waiting(): [number, number, number];
  /** This mutex at one priority, as a plain Mutex. */
  at(priority: Priority): Mutex;
}

interface Waiter {
  priority: Priority;
  since: number;
  resolve: (release: () => void) => void;
}

export function createPriorityMutex(
  opts: { promoteAfterMs?: number; now?: () => number } = {},
): PriorityMutex {
  const promoteAfterMs = opts.promoteAfterMs ?? 1000;
  const now = opts.now ?? (() => performance.now());
  const queues: [Waiter[], Waiter[], Waiter[]] = [[], [], []];
  let held = false;
  let lastWasPromoted = false;
  /** The background lane served last: the other goes first when both wait. */
  let lastBackground: Priority = ANALYTICS;

  /** The next waiter to serve, taken off its queue. */
  const next = (): Waiter | undefined => {
    if (!lastWasPromoted) {
      // The background waiter that has waited longest past the promotion age goes before the higher
      // priorities waiting with it: the foreground, and for analytics a worker that keeps queueing.
      const t = now();
      const aged = (w: Waiter | undefined, higherWaiting: boolean): w is Waiter =>
        w !== undefined && higherWaiting && t - w.since >= promoteAfterMs;
      const worker = queues[1][0];
      const analytics = queues[2][0];
      const eligible = [
        aged(worker, queues[0].length > 0) ? { w: worker, q: queues[1] } : undefined,
        aged(analytics, queues[0].length + queues[1].length > 0) ? { w: analytics, q: queues[2] } : undefined,
      ].filter((c) => c !== undefined);
      const oldest = eligible.sort((a, b) => a.w.since - b.w.since)[0];
      if (oldest) {
        lastWasPromoted = true;
        return served(oldest.q.shift());
      }
    }
    lastWasPromoted = false;
    const foreground = queues[0].shift();
    if (foreground) return foreground;
    const [first, second] = lastBackground === WORKER ? [queues[2], queues[1]] : [queues[1], queues[2]];
    return served(first.shift() ?? second.shift());
  };

  const served = (w: Waiter | undefined): Waiter | undefined => {
    if (w && w.priority !== FOREGROUND) lastBackground = w.priority;
    return w;
  };

  const releaser = () => {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const w = next();
      if (w) w.resolve(releaser());
      else held = false;
    };
  };

  const acquire = (priority: Priority = FOREGROUND): Promise<() => void> => {
    if (!held) {
      held = true;
      if (priority !== FOREGROUND) lastBackground = priority;
      return Promise.resolve(releaser());
    }
    return new Promise((resolve) => queues[priority].push({ priority, since: now(), resolve }));
  };

  const runExclusive = async <T>(fn: () => T | Promise<T>, priority: Priority = FOREGROUND): Promise<T> => {
    const release = await acquire(priority);
    try {
      return await fn();
    } finally {
      release();
    }
  };

  return {
    acquire,
    runExclusive,
    waiting: () => [queues[0].length, queues[1].length, queues[2].length],
    at: (priority) => ({
      acquire: () => acquire(priority),
      runExclusive: (fn) => runExclusive(fn, priority),
    }),
  };
}
