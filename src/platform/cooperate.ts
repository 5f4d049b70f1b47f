import { setImmediate as nextTurn } from 'node:timers/promises';

/**
 * Cooperative scheduling for long CPU work on the main thread (the processing worker shares it with
 * the HTTP server when ROLE=all): call the returned function between units of work; once the
 * current stretch has run `sliceMs`, it waits one turn of the event loop, so requests that arrived
 * meanwhile (a /health probe, an ingest) are served before the work goes on.
 */
export function createYielder(sliceMs = 8): Yielder {
  let since = performance.now();
  const due = () => performance.now() - since >= sliceMs;
  const yieldNow = async () => {
    if (!due()) return;
    await nextTurn();
    since = performance.now();
  };
  return Object.assign(yieldNow, { due });
}

/**
 * The slice of background work that no request waits for (a model fit and its rescoring): shorter,
 * because a request of another workspace needs several turns of the loop (body, authentication,
 * each query's answer) and waits up to one slice at each. Measured with bench/neighbour.bench.ts
 * (BENCH_NEIGHBOUR_KINDS=fit): docs/benchmarks.md "Noisy neighbour".
 */
export const BACKGROUND_SLICE_MS = 2;

/**
 * A yielder, and whether calling it now would wait: a loop of many tiny units (one batch item's
 * validation is ≈ 1.5 µs) checks `due()` and skips the `await` of the ones that would not.
 */
export type Yielder = (() => Promise<void>) & { due(): boolean };

const yielders = new WeakMap<object, Yielder>();

/**
 * The yielder of one unit of work whose steps live in different functions (a request's body
 * parser, then its validation): one clock for all of them, so each step does not start a fresh
 * slice of its own on top of the last one's.
 */
export function yielderFor(work: object, sliceMs = 8): Yielder {
  let y = yielders.get(work);
  if (!y) {
    y = createYielder(sliceMs);
    yielders.set(work, y);
  }
  return y;
}

/**
 * JSON.stringify of an array, one item at a time with `yieldNow` between items: one statement's
 * parameter of many big rows never holds the event loop for the whole serialization.
 */
export async function stringifyArray<T>(
  items: readonly T[],
  yieldNow: () => Promise<void>,
  map: (item: T) => unknown = (x) => x,
): Promise<string> {
  const parts: string[] = [];
  for (const item of items) {
    parts.push(JSON.stringify(map(item)));
    await yieldNow();
  }
  return `[${parts.join(',')}]`;
}
