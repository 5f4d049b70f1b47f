import { setImmediate as nextTurn } from 'node:timers/promises';

/**
 * Cooperative scheduling for long CPU work on the main thread (the processing worker shares it with
 * the HTTP server when ROLE=all): call the returned function between units of work; once the
 * current stretch has run `sliceMs`, it waits one turn of the event loop, so requests that arrived
 * meanwhile (a /health probe, an ingest) are served before the work goes on.
 */
export function createYielder(sliceMs = 8): () => Promise<void> {
  let since = performance.now();
  return async () => {
    if (performance.now() - since < sliceMs) return;
    await nextTurn();
    since = performance.now();
  };
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
