/**
 * A first-come mutex: one holder at a time, the others wait in arrival order. Used wherever one
 * resource cannot interleave two users (PGlite's single connection, the processing loops' order
 * step).
 */
export interface Mutex {
  /** Resolves, in arrival order, with the function that releases the mutex; calling it again does nothing. */
  acquire(): Promise<() => void>;
  /** Holds the mutex while fn runs; released however fn ends. */
  runExclusive<T>(fn: () => T | Promise<T>): Promise<T>;
}

export function createMutex(): Mutex {
  let held = false;
  const waiting: Array<(release: () => void) => void> = [];

  // Each holder gets its own release, so a second call cannot release a later holder.
  const releaser = () => {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = waiting.shift();
      if (next) next(releaser());
      else held = false;
    };
  };

  const acquire = (): Promise<() => void> => {
    if (!held) {
      held = true;
      return Promise.resolve(releaser());
    }
    return new Promise((resolve) => waiting.push(resolve));
  };

  return {
    acquire,
    async runExclusive(fn) {
      const release = await acquire();
      try {
        return await fn();
      } finally {
        release();
      }
    },
  };
}
