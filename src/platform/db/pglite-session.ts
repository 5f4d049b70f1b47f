import type { PGlite } from '@electric-sql/pglite';
import { createPriorityMutex, FOREGROUND, type Priority } from '../priority-mutex';
import { createStatementRunner } from './pglite-statements';
import type { QueryResult } from './port';

/**
 * The one connection to an embedded PGlite, used the same way whether it lives on the main thread
 * (pglite.ts, PGLITE_IN_PROCESS=1) or in a worker thread (pglite-thread.ts, the default). It adds
 * what PGlite's own query API lacks for a server:
 *
 * - **Prepared statements** (pglite-statements.ts).
 * - **One lock, served by priority.** A transaction holds the connection from BEGIN to COMMIT/ROLLBACK; every other
 *   statement waits for it in arrival order (a single backend cannot interleave two transactions).
 * - **Memory settings** that keep the resident size down (pglite-open.ts).
 * - **Checkpoints.** PGlite is PostgreSQL's single-user mode, which never checkpoints by itself:
 *   there is no checkpointer process, and the checkpoint PostgreSQL requests once `max_wal_size` of
 *   WAL is written is asked only of a server run by a postmaster. So the WAL since the last clean
 *   stop grew without bound (737 MB after 700k ingested events, measured), all of it replayed at
 *   the open after a crash (10.7 s for those 737 MB) and all of it kept on disk. The session runs a
 *   CHECKPOINT between statements once CHECKPOINT_WAL_BYTES were written since the last one, which
 *   bounds both.
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
  /** `priority`: its place in the connection's queue (foreground first; platform/priority-mutex.ts). */
  query<R>(sql: string, params?: readonly unknown[], priority?: Priority): Promise<QueryResult<R>>;
  exec(sql: string, priority?: Priority): Promise<void>;
  /** Waits for the connection (by priority), runs BEGIN and hands the connection over until end(). */
  begin(priority?: Priority): Promise<Lease>;
  listen(channel: string, handler: (payload: string) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`;

/**
 * WAL written since the last checkpoint that makes the session run one. A crash replays at most
 * about this much plus what is written until the next check (replay measured at 70–90 MB/s on the
 * 2-core development machine, so well under 2 s); a checkpoint writes out the dirty pages of the
 * 32 MB buffer pool, holding the connection meanwhile (docs/benchmarks.md, "Start-up").
 */
export const CHECKPOINT_WAL_BYTES = 64 * 1024 * 1024;
/** How often the session looks at the WAL written since the last checkpoint (one cheap query). */
export const CHECKPOINT_CHECK_MS = 2_000;

export interface PgliteSessionOptions {
  checkpointWalBytes?: number;
  checkpointCheckMs?: number;
}

const WAL_SINCE_CHECKPOINT = 'SELECT pg_current_wal_lsn() - redo_lsn AS n FROM pg_control_checkpoint()';

export function createPgliteSession(pg: PGlite, opts: PgliteSessionOptions = {}): PgliteSession {
  const lock = createPriorityMutex();
  const conn = createStatementRunner(pg);
  const handlers = new Map<string, Set<(payload: string) => void>>();
  let closed = false;

  const checkpointAt = opts.checkpointWalBytes ?? CHECKPOINT_WAL_BYTES;
  let checking = false;
  const checkpointIfDue = async () => {
    if (closed || checking) return;
    checking = true;
    try {
      await exclusive(async () => {
        const { rows } = await conn.query<{ n: number }>(WAL_SINCE_CHECKPOINT);
        if (Number(rows[0]?.n ?? 0) >= checkpointAt) await conn.simple('CHECKPOINT');
      });
    } catch {
      // Closed meanwhile, or the check failed: the next one tries again.
    } finally {
      checking = false;
    }
  };
  const checkpoints = setInterval(
    () => void checkpointIfDue(),
    opts.checkpointCheckMs ?? CHECKPOINT_CHECK_MS,
  );
  checkpoints.unref();

  const checkOpen = () => {
    if (closed) throw new Error('database is closed');
  };

  async function exclusive<T>(fn: () => Promise<T>, priority: Priority = FOREGROUND): Promise<T> {
    checkOpen();
    return lock.runExclusive(() => {
      checkOpen();
      return fn();
    }, priority);
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
    query: (sql, params, priority) => exclusive(() => conn.query(sql, params), priority),
    exec: (sql, priority) => exclusive(async () => void (await conn.simple(sql)), priority),
    async begin(priority) {
      checkOpen();
      const release = await lock.acquire(priority);
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
      clearInterval(checkpoints);
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
