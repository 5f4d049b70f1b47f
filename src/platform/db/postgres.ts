import pg from 'pg';
import type { Db, Queryable, QueryResult } from './port';

// int8 (20) and numeric (1700) as numbers: counts, sequence ids and decimal money all fit in a double.
pg.types.setTypeParser(20, (v) => Number(v));
pg.types.setTypeParser(1700, (v) => Number(v));

/** Connections per process: enough for the group-committer, two claiming loops and the API's reads. */
export const POSTGRES_POOL_SIZE = 20;

export interface PostgresOptions {
  url: string;
  /** Every connection's search_path is set to this schema (tests isolate runs this way). */
  schema?: string | null;
  max?: number;
}

export async function createPostgresDb(opts: PostgresOptions): Promise<Db> {
  const schema = opts.schema ?? null;
  const connOptions = schema ? `-c search_path=${schema}` : undefined;
  if (schema) {
    const admin = new pg.Client({ connectionString: opts.url });
    await admin.connect();
    try {
      await admin.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    } finally {
      await admin.end();
    }
  }
  const pool = new pg.Pool({
    connectionString: opts.url,
    max: opts.max ?? POSTGRES_POOL_SIZE,
    options: connOptions,
    idleTimeoutMillis: 30_000,
  });
  // An idle client that errors (server restart) must not crash the process; the pool replaces it.
  pool.on('error', () => {});

  const run = async <R>(q: Queryable | pg.Pool | pg.PoolClient, sql: string, params?: readonly unknown[]) => {
    const res = await (q as pg.Pool).query(sql, params as unknown[] | undefined);
    return { rows: res.rows as R[], rowCount: res.rowCount ?? 0 } satisfies QueryResult<R>;
  };

  let listener: pg.Client | null = null;
  let listening = false;
  let closed = false;
  const handlers = new Map<string, Set<(payload: string) => void>>();
  const lostHandlers = new Set<() => void>();

  async function ensureListener(): Promise<pg.Client> {
    if (listener) return listener;
    const client = new pg.Client({ connectionString: opts.url, options: connOptions });
    client.on('notification', (msg) => {
      for (const h of handlers.get(msg.channel) ?? []) h(msg.payload ?? '');
    });
    const lost = () => {
      if (listener !== client) return;
      listener = null;
      listening = false;
      for (const h of lostHandlers) h();
      scheduleReconnect();
    };
    client.on('error', lost);
    client.on('end', lost);
    await client.connect();
    for (const channel of handlers.keys()) await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    listener = client;
    listening = true;
    return client;
  }

  // After a lost listener, reconnect and re-LISTEN every channel; until then `listening` stays false.
  function scheduleReconnect(): void {
    if (closed) return;
    setTimeout(() => {
      if (closed || listener) return;
      ensureListener().catch(scheduleReconnect);
    }, 1000).unref();
  }

  return {
    engine: 'postgres',
    query: (sql, params) => run(pool, sql, params),
    async exec(sql) {
      await pool.query(sql);
    },
    async transaction(fn) {
      const client = await pool.connect();
      // A handle kept past the end would run on a client already back in the pool.
      let finished = false;
      const live = () => {
        if (finished) throw new Error('transaction is already finished');
      };
      try {
        await client.query('BEGIN');
        const tx: Queryable = {
          query: async (sql, params) => {
            live();
            return run(client, sql, params);
          },
          exec: async (sql) => {
            live();
            await client.query(sql);
          },
        };
        const result = await fn(tx);
        await client.query('COMMIT');
        return result;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {});
        throw err;
      } finally {
        finished = true;
        client.release();
      }
    },
    async listen(channel, handler, onLost) {
      const client = await ensureListener();
      let set = handlers.get(channel);
      if (!set) {
        set = new Set();
        handlers.set(channel, set);
        await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
      }
      set.add(handler);
      if (onLost) lostHandlers.add(onLost);
      return async () => {
        set.delete(handler);
        if (onLost) lostHandlers.delete(onLost);
      };
    },
    get listening() {
      return listening;
    },
    async close() {
      closed = true;
      const l = listener;
      listener = null;
      listening = false;
      if (l) await l.end().catch(() => {});
      await pool.end();
    },
  };
}
