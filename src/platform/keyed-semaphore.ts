/**
 * Slots per key (a workspace), taken without waiting: an operation either gets one of its key's
 * `limit` slots at once or is refused, so a tenant that asks for more than its share is told to come
 * back (429) instead of queueing work that holds memory and connections meanwhile. In-process: each
 * service process enforces it on its own.
 */
export interface KeyedSemaphore {
  /** A release function, or null when `key` already holds `limit` slots. Release exactly once. */
  tryAcquire(key: string, limit: number): (() => void) | null;
  /** Slots `key` holds now. */
  held(key: string): number;
}

export function createKeyedSemaphore(): KeyedSemaphore {
  const counts = new Map<string, number>();
  return {
    tryAcquire(key, limit) {
      const n = counts.get(key) ?? 0;
      if (n >= limit) return null;
      counts.set(key, n + 1);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        const left = (counts.get(key) ?? 1) - 1;
        if (left <= 0) counts.delete(key);
        else counts.set(key, left);
      };
    },
    held: (key) => counts.get(key) ?? 0,
  };
}
