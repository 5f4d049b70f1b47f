import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { PGlite, parse, protocol } from '@electric-sql/pglite';
import type { QueryResult } from './port';

/**
 * The one connection to an embedded PGlite, used the same way whether it lives on the main thread
 * (pglite.ts, PGLITE_IN_PROCESS=1) or in a worker thread (pglite-thread.ts, the default). It adds
 * what PGlite's own query API lacks for a server:
 *
 * - **Prepared statements.** `PGlite.query` parses, describes and plans every statement each time
 *   (six calls into WASM). Here each distinct SQL text is prepared once as a named statement and
 *   then runs as one Bind/Describe/Execute/Sync exchange: measured 3–4× faster on the API's queries.
 * - **One lock.** A transaction holds the connection from BEGIN to COMMIT/ROLLBACK; every other
 *   statement waits for it (a single backend cannot interleave two transactions).
 * - **Memory settings** that keep the resident size down (see PGLITE_START_PARAMS).
 *
 * Results are parsed on PGlite's thread: with PGlite in a worker, that keeps the protocol parsing
 * off the main thread, which has the HTTP work to do (measured: parsing results on the main thread
 * instead cost ~20% of batch-ingest throughput).
 */

const INT8 = 20;
const NUMERIC = 1700;

/**
 * Server settings on top of PGlite's defaults. PGlite's initdb picks shared_buffers = 128 MB, and
 * the WASM heap grows past it as pages are touched (≈ 190 MB of linear memory, ≈ 350 MB RSS once
 * open). 32 MB of buffers keeps the heap at its 128 MB minimum; pages beyond it are re-read from
 * the data files through the OS page cache. Measured: RSS ≈ 240 MB after open instead of ≈ 350.
 */
export const PGLITE_START_PARAMS: readonly string[] = [
  ...PGlite.defaultStartParams,
  '-c',
  'shared_buffers=32MB',
  '-c',
  'temp_buffers=2MB',
];

/** Opens PGlite with the service's settings: numbers for int8/numeric, the memory settings above. */
export async function openPglite(dataDir: string | null): Promise<PGlite> {
  if (dataDir) mkdirSync(dataDir, { recursive: true });
  return PGlite.create({
    ...(dataDir ? { dataDir: resolve(dataDir) } : {}),
    startParams: [...PGLITE_START_PARAMS],
    parsers: { [INT8]: (v: string) => Number(v), [NUMERIC]: (v: string) => Number(v) },
  });
}

/** True when the directory already holds a database cluster (initdb has run). */
export function clusterExists(dataDir: string): boolean {
  return existsSync(join(dataDir, 'PG_VERSION'));
}

/** The PostgreSQL error fields a caller may look at (isUniqueViolation reads `code`). */
const ERROR_FIELDS = [
  'code',
  'severity',
  'detail',
  'hint',
  'position',
  'schema',
  'table',
  'column',
  'dataType',
  'constraint',
  'routine',
] as const;

export interface SerializedDbError {
  message: string;
  fields: Partial<Record<(typeof ERROR_FIELDS)[number], string>>;
}

/** Flattens a database error for postMessage (a structured clone keeps only an Error's message). */
export function serializeDbError(err: unknown): SerializedDbError {
  const e = err as Record<string, unknown> | null;
  const fields: SerializedDbError['fields'] = {};
  for (const f of ERROR_FIELDS) if (typeof e?.[f] === 'string') fields[f] = e[f] as string;
  return { message: err instanceof Error ? err.message : String(err), fields };
}

export function deserializeDbError(s: SerializedDbError): Error {
  const err = new Error(s.message);
  err.name = 'DatabaseError';
  Object.assign(err, s.fields);
  return err;
}

const { serialize } = protocol;

function concat(parts: Uint8Array[]): Uint8Array {
  let size = 0;
  for (const p of parts) size += p.length;
  const out = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/**
 * The row count as node-postgres reports it: the number ending the command tag (`SELECT 3`,
 * `INSERT 0 3`, `UPDATE 2`), for SELECT too (PGlite's own affectedRows is 0 there).
 */
function rowCountOf(msgs: readonly { name: string }[], fallback: number): number {
  for (let i = msgs.length - 1; i >= 0; i--) {
    const m = msgs[i]!;
    if (m.name === 'commandComplete') {
      const n = /(\d+)$/.exec((m as unknown as { text: string }).text);
      return n ? Number(n[1]) : fallback;
    }
  }
  return fallback;
}

/** A FIFO lock: the holder of the connection runs; everyone else waits in arrival order. */
function createLock() {
  let tail: Promise<void> = Promise.resolve();
  return {
    acquire(): Promise<() => void> {
      let release!: () => void;
      const held = new Promise<void>((r) => {
        release = r;
      });
      const ready = tail.then(() => release);
      tail = tail.then(() => held);
      return ready;
    },
  };
}

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

/** Prepared statements kept per session; beyond this the least recently used is closed. */
const STATEMENT_CACHE_SIZE = 256;

export function createPgliteSession(pg: PGlite): PgliteSession {
  const lock = createLock();
  const statements = new Map<string, { name: string; paramTypes: number[] }>();
  const toClose: string[] = [];
  const handlers = new Map<string, Set<(payload: string) => void>>();
  let nextStatement = 0;
  let closed = false;

  // PGlite parses the reply, throws its first error and dispatches notifications (onNotification).
  const run = (message: Uint8Array) => pg.execProtocolStream(message, { syncToFs: false });

  async function prepare(sql: string) {
    const name = `cdp_${nextStatement++}`;
    const msgs = await run(
      concat([
        serialize.parse({ name, text: sql }),
        serialize.describe({ type: 'S', name }),
        serialize.sync(),
      ]),
    );
    const desc = msgs.find((m) => m.name === 'parameterDescription') as
      | { dataTypeIDs?: number[] }
      | undefined;
    const st = { name, paramTypes: desc?.dataTypeIDs ?? [] };
    statements.set(sql, st);
    if (statements.size > STATEMENT_CACHE_SIZE) {
      const [oldestSql, oldest] = statements.entries().next().value as [string, { name: string }];
      statements.delete(oldestSql);
      toClose.push(oldest.name);
    }
    return st;
  }

  async function runPrepared<R>(sql: string, params: readonly unknown[]): Promise<QueryResult<R>> {
    let st = statements.get(sql);
    if (st) {
      // Most recently used last: Map keeps insertion order, which makes the first entry the LRU.
      statements.delete(sql);
      statements.set(sql, st);
    } else {
      st = await prepare(sql);
    }
    const values = params.map((v, i) => {
      if (v === null || v === undefined) return null;
      const serializer = pg.serializers[st.paramTypes[i] ?? 0];
      return serializer ? serializer(v) : String(v);
    });
    const parts = toClose.splice(0).map((name) => serialize.close({ type: 'S', name }));
    parts.push(
      serialize.bind({ statement: st.name, values }),
      serialize.describe({ type: 'P' }),
      serialize.execute({}),
      serialize.sync(),
    );
    try {
      const msgs = await run(concat(parts));
      const rows = (parse.parseResults(msgs, pg.parsers)[0]?.rows ?? []) as R[];
      return { rows, rowCount: rowCountOf(msgs, rows.length) };
    } catch (err) {
      // A cached plan whose result columns changed (DDL since it was prepared) cannot be reused.
      if ((err as { code?: string }).code === '0A000') statements.delete(sql);
      throw err;
    }
  }

  async function query<R>(sql: string, params: readonly unknown[] = []): Promise<QueryResult<R>> {
    try {
      return await runPrepared<R>(sql, params);
    } catch (err) {
      if ((err as { code?: string }).code === '0A000' && !pg.isInTransaction()) {
        return runPrepared<R>(sql, params); // prepared again against the table's new definition
      }
      throw err;
    }
  }

  /** Simple-protocol script (several statements, no parameters); returns the last command tag. */
  async function simple(sql: string): Promise<string> {
    const msgs = await run(concat([serialize.query(sql), serialize.sync()]));
    let tag = '';
    for (const m of msgs) if (m.name === 'commandComplete') tag = (m as unknown as { text: string }).text;
    return tag;
  }

  const checkOpen = () => {
    if (closed) throw new Error('database is closed');
  };

  async function exclusive<T>(fn: () => Promise<T>): Promise<T> {
    checkOpen();
    const release = await lock.acquire();
    try {
      checkOpen();
      return await fn();
    } finally {
      release();
    }
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
  const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`;

  return {
    query: (sql, params) => exclusive(() => query(sql, params)),
    exec: (sql) => exclusive(async () => void (await simple(sql))),
    async begin() {
      checkOpen();
      const release = await lock.acquire();
      try {
        checkOpen();
        await simple('BEGIN');
      } catch (err) {
        release();
        throw err;
      }
      let ended = false;
      const live = () => {
        if (ended) throw new Error('transaction is already finished');
      };
      return {
        async query(sql, params) {
          live();
          return query(sql, params);
        },
        async exec(sql) {
          live();
          await simple(sql);
        },
        async end(commit) {
          live();
          ended = true;
          try {
            if (!commit) {
              await simple('ROLLBACK');
              return;
            }
            // COMMIT of a transaction that already failed answers ROLLBACK: the caller must know.
            if ((await simple('COMMIT')) === 'ROLLBACK') {
              throw Object.assign(new Error('transaction was aborted by an earlier error and rolled back'), {
                code: '25P02',
              });
            }
          } finally {
            release();
          }
        },
      };
    },
    async listen(channel, handler) {
      let set = handlers.get(channel);
      if (!set) {
        set = new Set();
        handlers.set(channel, set);
        await exclusive(() => simple(`LISTEN ${quoteIdent(channel)}`));
      }
      set.add(handler);
      return async () => {
        set.delete(handler);
      };
    },
    async close() {
      if (closed) return;
      // Waits for the statement or transaction in progress, then refuses everything after.
      const release = await lock.acquire();
      if (closed) {
        release();
        return;
      }
      closed = true;
      try {
        await pg.close();
      } finally {
        release();
      }
    },
  };
}
