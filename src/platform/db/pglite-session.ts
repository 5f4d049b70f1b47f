import type { PGlite } from '@electric-sql/pglite';
import { createMutex } from '../mutex';
import { createStatementRunner } from './pglite-statements';
import type { QueryResult } from './port';

/**
 * The one connection to an embedded PGlite, used the same way whether it lives on the main thread
 * (pglite.ts, PGLITE_IN_PROCESS=1) or in a worker thread (pglite-thread.ts, the default). It adds
 * what PGlite's own query API lacks for a server:
 *
 * - **Prepared statements** (pglite-statements.ts).
 * - **One lock.** A transaction holds the connection from BEGIN to COMMIT/ROLLBACK; every other
 *   statement waits for it in arrival order (a single backend cannot interleave two transactions).
 * - **Memory settings** that keep the resident size down (pglite-open.ts).
 *
 * Results are parsed on PGlite's thread: with PGlite in a worker, that keeps the protocol parsing
 * off the main thread, which has the HTTP work to do (measured: parsing results on the main thread
 * instead cost ~20% of batch-ingest throughput).
 */

/** Statements run while holding the connection, inside a transaction. */
export interface Lease {
  query<R>(sql: string, params?: readonly unknown[]): Promise<QueryResult<R>>;
  exec(sql: string): Promise<void>;
  /** COMMIT (or ROLLBACK) and give the connection back. A COMMIT of a failed transaction throws. */
  end(commit: boolean): Promise<void>;
}

export interface PgliteSession {
  query<R>(sql: string, params?: readonly unknown[]): Promise<QueryResult<R>>;
  exec(sql: string): Promise<void>;
  /** Waits for the connection, runs BEGIN and hands the connection over until end(). */
  begin(): Promise<Lease>;
  listen(channel: string, handler: (payload: string) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`;

export function createPgliteSession(pg: PGlite): PgliteSession {
  const lock = createMutex();
  const conn = createStatementRunner(pg);
  const handlers = new Map<string, Set<(payload: string) => void>>();
  let closed = false;

  const checkOpen = () => {
    if (closed) throw new Error('database is closed');
  };

  async function exclusive<T>(fn: () => Promise<T>): Promise<T> {
    checkOpen();
    return lock.runExclusive(() => {
      checkOpen();
      return fn();
    });
  }

  pg.onNotification((channel, payload) => {
    for (const h of handlers.get(channel) ?? []) {
      try {
        h(payload);
      } catch {
        // A listener's bug must not disturb the statement that carried its notification.
      }
    }
  });

  /** The connection, held from BEGIN until end(). */
  function leaseFor(release: () => void): Lease {
    let ended = false;
    const live = () => {
      if (ended) throw new Error('transaction is already finished');
    };
    return {
      async query(sql, params) {
        live();
        return conn.query(sql, params);
      },
      async exec(sql) {
        live();
        await conn.simple(sql);
      },
      async end(commit) {
        live();
        ended = true;
        try {
          if (!commit) {
            await conn.simple('ROLLBACK');
            return;
          }
          // COMMIT of a transaction that already failed answers ROLLBACK: the caller must know.
          if ((await conn.simple('COMMIT')) === 'ROLLBACK') {
            throw Object.assign(new Error('transaction was aborted by an earlier error and rolled back'), {
              code: '25P02',
            });
          }
        } finally {
          release();
        }
      },
    };
  }

  return {
    query: (sql, params) => exclusive(() => conn.query(sql, params)),
    exec: (sql) => exclusive(async () => void (await conn.simple(sql))),
    async begin() {
      checkOpen();
      const release = await lock.acquire();
      try {
        checkOpen();
        await conn.simple('BEGIN');
      } catch (err) {
        release();
        throw err;
      }
      return leaseFor(release);
    },
    async listen(channel, handler) {
      let set = handlers.get(channel);
      if (!set) {
        set = new Set();
        handlers.set(channel, set);
        await exclusive(() => conn.simple(`LISTEN ${quoteIdent(channel)}`));
      }
      set.add(handler);
      return async () => {
        set.delete(handler);
      };
    },
    async close() {
      if (closed) return;
      // Waits for the statement or transaction in progress, then refuses everything after.
      await lock.runExclusive(async () => {
        if (closed) return;
        closed = true;
        await pg.close();
      });
    },
  };
}
