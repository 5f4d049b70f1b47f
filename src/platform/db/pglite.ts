import { mkdirSync } from 'node:fs';
import { clusterExists, openPglite } from './pglite-open';
import { createPgliteSession } from './pglite-session';
import { createPgliteWorkerDb, initClusterInChild } from './pglite-worker';
import type { Db, Queryable } from './port';

export interface PgliteOptions {
  /** Directory for the database files; null keeps everything in memory (tests). */
  dataDir: string | null;
  /**
   * Run PGlite on the calling thread instead of a worker thread. In-process, a long statement
   * stalls every request of the process (PGlite's WASM runs synchronously on the event loop); in a
   * worker thread it delays only other statements. docs/benchmarks.md has both measured.
   */
  inProcess?: boolean;
}

/**
 * Embedded PostgreSQL (WASM). A single backend: a transaction excludes every other statement until
 * it ends, so keep transactions short. Notifications only ever come from this same process, so
 * `listening` is always true (nothing else can change the database).
 */
export async function createPgliteDb(opts: PgliteOptions): Promise<Db> {
  if (opts.dataDir) {
    mkdirSync(opts.dataDir, { recursive: true });
    // First start: initdb in a child process, whose memory all goes back when it exits.
    if (!clusterExists(opts.dataDir)) await initClusterInChild(opts.dataDir);
  }
  if (!opts.inProcess) return createPgliteWorkerDb({ dataDir: opts.dataDir });

  const session = createPgliteSession(await openPglite(opts.dataDir));
  return {
    engine: 'pglite',
    query: (sql, params) => session.query(sql, params),
    exec: (sql) => session.exec(sql),
    async transaction(fn) {
      const lease = await session.begin();
      let finished = false;
      const live = () => {
        if (finished) throw new Error('transaction is already finished');
      };
      const tx: Queryable = {
        query: async (sql, params) => {
          live();
          return lease.query(sql, params);
        },
        exec: async (sql) => {
          live();
          await lease.exec(sql);
        },
      };
      let result: Awaited<ReturnType<typeof fn>>;
      try {
        result = await fn(tx);
      } catch (err) {
        finished = true;
        await lease.end(false).catch(() => {});
        throw err;
      }
      finished = true;
      await lease.end(true);
      return result;
    },
    listen: (channel, handler) => session.listen(channel, handler),
    listening: true,
    close: () => session.close(),
  };
}
