import { mkdirSync, writeFileSync } from 'node:fs';
import type { PGlite } from '@electric-sql/pglite';
import { type DataDirLock, lockDataDir } from './data-dir-lock';
import { narrowDataDirModes } from './data-dir-modes';
import { LANE_PRIORITY, withLanes } from './lanes';
import type { OnOpenEvent } from './open-progress';
import { clusterExists, openPglite } from './pglite-open';
import { type PendingRecovery, pendingRecovery, replayedBytes } from './pglite-recovery';
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
  /**
   * A dump of a migrated database (`dumpMigratedDatabase`) that a new database starts from instead
   * of initdb and the migrations; an existing data directory ignores it. The test suite starts
   * hundreds of services: each would spend seconds on initdb and the migrations.
   */
  template?: string | null;
  /** Creation, crash recovery (with its progress) and the open, as they happen. */
  onProgress?: OnOpenEvent;
}

/** How often a recovery's progress is reported while PGlite replays its WAL. */
const REPLAY_REPORT_MS = 1000;

/**
 * Embedded PostgreSQL (WASM). A single backend: a transaction excludes every other statement until
 * it ends, so keep transactions short. Notifications only ever come from this same process, so
 * `listening` is always true (nothing else can change the database).
 */
export async function createPgliteDb(opts: PgliteOptions): Promise<Db> {
  // Before anything reads or writes the directory: it serves one process at a time.
  const lock = opts.dataDir ? await lockDataDir(opts.dataDir) : null;
  try {
    const db = await openLocked(opts);
    return lock ? releasingOnClose(db, lock) : db;
  } catch (err) {
    lock?.release();
    throw err;
  }
}

/** Creates the cluster on a first start, or replays what a crash left (reported), then opens it. */
async function openLocked(opts: PgliteOptions): Promise<Db> {
  const report = opts.onProgress ?? (() => {});
  const t0 = performance.now();
  let recovery: PendingRecovery | null = null;
  if (opts.dataDir) {
    mkdirSync(opts.dataDir, { recursive: true, mode: 0o700 });
    // Before PGlite reads or writes a file: what is found wider than owner-only is narrowed, and said.
    const narrowed = narrowDataDirModes(opts.dataDir);
    if (narrowed.files + narrowed.directories > 0)
      report({ step: 'narrowed', dataDir: opts.dataDir, ...narrowed });
    if (!clusterExists(opts.dataDir)) {
      // First start: initdb in a child process, whose memory all goes back when it exits (or the
      // template, unpacked by the open below).
      report({ step: 'creating', dataDir: opts.dataDir });
      if (!opts.template) await initClusterInChild(opts.dataDir);
      report({ step: 'created', ms: performance.now() - t0 });
    } else {
      recovery = pendingRecovery(opts.dataDir);
    }
  }
  const dataDir = opts.dataDir;
  let progress: NodeJS.Timeout | undefined;
  const t1 = performance.now();
  if (recovery && dataDir) {
    const r = recovery;
    report({ step: 'recovering', walBytes: r.walBytes });
    progress = setInterval(() => {
      report({
        step: 'replaying',
        replayedBytes: replayedBytes(dataDir, r),
        walBytes: r.walBytes,
        elapsedMs: performance.now() - t1,
      });
    }, REPLAY_REPORT_MS);
  }
  let db: Db;
  try {
    const template = opts.template ?? null;
    db = opts.inProcess
      ? await openInProcess(await openPglite(dataDir, template))
      : await createPgliteWorkerDb({ dataDir, template });
  } finally {
    clearInterval(progress);
  }
  if (recovery) report({ step: 'recovered', ms: performance.now() - t1 });
  report({ step: 'opened', engine: 'pglite', ms: performance.now() - t0 });
  return db;
}

/** The lock goes once the database has closed, whatever the close did (from any lane's handle). */
function releasingOnClose(db: Db, lock: DataDirLock): Db {
  const close = async () => {
    try {
      await db.close();
    } finally {
      lock.release();
    }
  };
  return withLanes((lane) => {
    const h = db.lane(lane);
    return {
      engine: h.engine,
      query: h.query,
      exec: h.exec,
      transaction: h.transaction,
      listen: h.listen,
      listening: h.listening,
      close,
    };
  });
}

function openInProcess(pglite: PGlite): Db {
  const session = createPgliteSession(pglite);
  return withLanes((laneName) => {
    const priority = LANE_PRIORITY[laneName];
    return {
      engine: 'pglite',
      query: (sql, params) => session.query(sql, params, priority),
      exec: (sql) => session.exec(sql, priority),
      async transaction(fn) {
        const lease = await session.begin(priority);
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
  });
}

/**
 * Writes to `file` a dump of a new in-memory database that `prepare` (the migrations) has run on:
 * the template of PgliteOptions.template. Checkpointed first, so a database made from it opens
 * without replaying the WAL.
 */
export async function dumpMigratedDatabase(
  file: string,
  prepare: (db: Db) => Promise<unknown>,
): Promise<void> {
  const pglite = await openPglite(null);
  const db = openInProcess(pglite);
  try {
    await prepare(db);
    await db.exec('CHECKPOINT');
    const dump = await pglite.dumpDataDir('none');
    writeFileSync(file, Buffer.from(await dump.arrayBuffer()), { mode: 0o600 });
  } finally {
    await db.close();
  }
}
