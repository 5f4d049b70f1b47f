import pg from 'pg';
import { encodeArrayParams } from './array-literal';
import { isStorageUnavailable } from './errors';
import { withLanes } from './lanes';
import { channelSuffix } from './notify';
import type { Db, Lane, Queryable, QueryOptions, QueryResult } from './port';
import { createTimestamptzParser } from './timestamps';

// int8 (20) and numeric (1700) as numbers: counts, sequence ids and decimal money all fit in a double.
pg.types.setTypeParser(20, (v) => Number(v));
pg.types.setTypeParser(1700, (v) => Number(v));
// timestamptz (1184) read at fixed positions; anything unusual still goes to pg's own parser.
pg.types.setTypeParser(1184, createTimestamptzParser(pg.types.getTypeParser(1184, 'text')));

/** Connections per process: enough for the group-committer, two claiming loops and the API's reads. */
export const POSTGRES_POOL_SIZE = 20;
/**
 * Connections per process for the analytics lane (segment calculations and refreshes, model fits):
 * a pool of its own, so however many of those one workspace asks for, the main pool keeps every
 * connection for requests and workers. Past it, an analytics statement waits for a connection (up
 * to the connect timeout, then 503), nothing else does.
 */
export const POSTGRES_ANALYTICS_POOL_SIZE = 4;
/**
 * The analytics lane's statements are bounded by the server (statement_timeout on its connections),
 * so one over it is cancelled and stops using the server's CPU, instead of running on after the
 * client gave up; the client waits a little longer than the server. Segment slices and fit pages
 * take well under a second; a calculation sets a tighter bound of its own (its budget).
 */
export const POSTGRES_ANALYTICS_STATEMENT_MS = 60_000;

/**
 * Bounds that keep a database outage from hanging requests (each failure is then a 503 with
 * Retry-After, see errors.ts):
 * - connecting, or waiting for a free pooled connection, gives up after CONNECT_TIMEOUT_MS;
 * - a statement whose answer has not arrived after QUERY_TIMEOUT_MS fails and its connection is
 *   destroyed. The largest statements of a 1000-event worker batch take ≈ 25 ms, so this only cuts
 *   off a dead connection (a server gone without a word, a network partition, a frozen server),
 *   which TCP alone would notice only after many minutes, or a statement stuck behind a lock far
 *   longer than any request should wait. Scripts (`exec`: migrations) have no such bound.
 *   One call therefore ends within CONNECT + QUERY (10 s) whatever the database does;
 * - TCP keepalive probes idle connections, so a silently dead one is not handed out for long.
 */
export const POSTGRES_CONNECT_TIMEOUT_MS = 5_000;
export const POSTGRES_QUERY_TIMEOUT_MS = 5_000;
const KEEPALIVE_DELAY_MS = 10_000;

export interface PostgresOptions {
  url: string;
  /** Every connection's search_path is set to this schema (tests isolate runs this way). */
  schema?: string | null;
  max?: number;
  /** Connections of the analytics lane's pool (POSTGRES_ANALYTICS_POOL_SIZE). */
  analyticsMax?: number;
  connectTimeoutMs?: number;
  queryTimeoutMs?: number;
}

/** pg emits 'error' on a client whose socket dies; without a listener that crashes the process. */
const ignoreError = () => {};

export async function createPostgresDb(opts: PostgresOptions): Promise<Db> {
  const schema = opts.schema ?? null;
  // JIT off: it compiled for 80 ms to 1.2 s before segment queries of 0.5–8 s over 1M profiles
  // (EXPLAIN ANALYZE, docs/decisions.md "Segments") and never pays back on the service's statements.
  // No parallel workers: a statement is one backend, so the pools' sizes bound the server's CPU a
  // workspace can take (the analytics pool's 4, not 4 × 3), and a segment count does not pay a
  // worker's start-up, which cost 3–8× a 15 ms count here (docs/decisions.md "One backend per
  // statement").
  const connOptions = [
    '-c jit=off',
    '-c max_parallel_workers_per_gather=0',
    schema ? `-c search_path=${schema}` : '',
  ]
    .join(' ')
    .trim();
  const connectTimeoutMs = opts.connectTimeoutMs ?? POSTGRES_CONNECT_TIMEOUT_MS;
  const queryTimeoutMs = opts.queryTimeoutMs ?? POSTGRES_QUERY_TIMEOUT_MS;
  const clientConfig = {
    connectionString: opts.url,
    // Which process a backend serves, in pg_stat_activity: an operator finds a worker's lock waits
    // by it, and the processing benchmark the CPU of the service's backends (docs/operations.md).
    application_name: `cdp:${process.pid}`,
    options: connOptions,
    connectionTimeoutMillis: connectTimeoutMs,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_DELAY_MS,
  };
  // pg reads a per-statement `query_timeout` from the query config; its types do not declare it.
  const timed = (text: string, values?: readonly unknown[], timeoutMs = queryTimeoutMs) =>
    ({ text, values, query_timeout: timeoutMs }) as pg.QueryConfig;
  if (schema) {
    const admin = new pg.Client({ ...clientConfig, options: undefined });
    admin.on('error', ignoreError);
    await admin.connect();
    try {
      await admin.query(timed(`CREATE SCHEMA IF NOT EXISTS ${schema}`));
    } catch (err) {
      // Two processes starting at once both pass IF NOT EXISTS and one insert loses on the catalog's
      // unique index (23505, or 42P06): the schema exists, which is all this wanted.
      const code = (err as { code?: string }).code;
      if (code !== '23505' && code !== '42P06') throw err;
    } finally {
      await admin.end().catch(ignoreError);
    }
  }
  const newPool = (max: number, options = connOptions) => {
    const p = new pg.Pool({ ...clientConfig, options, max, idleTimeoutMillis: 30_000 });
    // An idle client that errors (server restart) must not crash the process; the pool replaces it.
    p.on('error', ignoreError);
    return p;
  };
  const mainPool = newPool(opts.max ?? POSTGRES_POOL_SIZE);
  const analyticsPool = newPool(
    opts.analyticsMax ?? POSTGRES_ANALYTICS_POOL_SIZE,
    `${connOptions} -c statement_timeout=${POSTGRES_ANALYTICS_STATEMENT_MS}`,
  );
  const poolOf = (lane: Lane) => (lane === 'analytics' ? analyticsPool : mainPool);

  const run = async <R>(
    q: pg.Pool | pg.PoolClient,
    sql: string,
    params?: readonly unknown[],
    options?: QueryOptions,
    defaultTimeoutMs = queryTimeoutMs,
  ) => {
    const res = await q.query(timed(sql, encodeArrayParams(params), options?.timeoutMs ?? defaultTimeoutMs));
    return { rows: res.rows as R[], rowCount: res.rowCount ?? 0 } satisfies QueryResult<R>;
  };

  let listener: pg.Client | null = null;
  /** This deployment's channel suffix, read when the listener connects (before any LISTEN). */
  let suffix = '';
  let listening = false;
  let closed = false;
  const handlers = new Map<string, Set<(payload: string) => void>>();
  const lostHandlers = new Set<() => void>();

  async function ensureListener(): Promise<pg.Client> {
    if (listener) return listener;
    const client = new pg.Client(clientConfig);
    client.on('notification', (msg) => {
      for (const h of handlers.get(msg.channel.slice(0, msg.channel.length - suffix.length)) ?? []) {
        try {
          h(msg.payload ?? '');
        } catch {
          // A listener's bug must not disturb the connection that carried its notification.
        }
      }
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
    try {
      await client.connect();
      // The deployment's channels (notify.ts) are named after the schema the tables are in: the
      // connection's current one, which is also where a search_path without DATABASE_SCHEMA put them.
      const { rows } = await client.query<{ s: string | null }>(timed('SELECT current_schema() AS s'));
      suffix = channelSuffix(rows[0]?.s);
      for (const channel of handlers.keys()) {
        await client.query(timed(`LISTEN ${pg.escapeIdentifier(channel + suffix)}`));
      }
    } catch (err) {
      // Half set up (connected, a LISTEN failed): close it, or each retry would leak a connection.
      await client.end().catch(ignoreError);
      throw err;
    }
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

  const listen: Db['listen'] = async (channel, handler, onLost) => {
    const client = await ensureListener();
    let set = handlers.get(channel);
    if (!set) {
      set = new Set();
      handlers.set(channel, set);
      await client.query(timed(`LISTEN ${pg.escapeIdentifier(channel + suffix)}`));
    }
    set.add(handler);
    if (onLost) lostHandlers.add(onLost);
    return async () => {
      set.delete(handler);
      if (onLost) lostHandlers.delete(onLost);
    };
  };
  const close = async () => {
    closed = true;
    const l = listener;
    listener = null;
    listening = false;
    if (l) await l.end().catch(() => {});
    await Promise.all([mainPool.end(), analyticsPool.end()]);
  };

  return withLanes((lane) => {
    const pool = poolOf(lane);
    // The client's bound: past the server's own on the analytics lane, so the server's cancel ends it.
    const bound = lane === 'analytics' ? POSTGRES_ANALYTICS_STATEMENT_MS + 5_000 : queryTimeoutMs;
    return {
      engine: 'postgres',
      query: (sql, params, options) => run(pool, sql, params, options, bound),
      async exec(sql) {
        await pool.query(sql);
      },
      async transaction(fn, options) {
        const client = await pool.connect();
        // While checked out, the pool's own error listener is off: the socket can die between two
        // statements (while fn awaits something else), and pg then emits 'error' on the client.
        let broken: Error | null = null;
        const onError = (err: Error) => {
          broken ??= err;
        };
        client.on('error', onError);
        // A handle kept past the end would run on a client already back in the pool.
        let finished = false;
        const live = () => {
          if (finished) throw new Error('transaction is already finished');
          if (broken) throw broken;
        };
        try {
          await run(client, 'BEGIN');
          if (options?.statementTimeoutMs !== undefined) {
            // A whole number of milliseconds, so the setting cannot be anything but a duration.
            await run(
              client,
              `SET LOCAL statement_timeout = ${Math.max(1, Math.round(options.statementTimeoutMs))}`,
            );
          }
          const tx: Queryable = {
            query: async (sql, params, options) => {
              live();
              return run(client, sql, params, options, bound);
            },
            exec: async (sql) => {
              live();
              await client.query(sql);
            },
          };
          const result = await fn(tx);
          live();
          await run(client, 'COMMIT');
          return result;
        } catch (err) {
          // A lost or timed-out connection is not rolled back over the wire (the server rolls back
          // when it drops); it is destroyed instead of going back to the pool.
          if (!broken && isStorageUnavailable(err)) broken = err as Error;
          if (!broken) await run(client, 'ROLLBACK').catch(onError);
          throw err;
        } finally {
          finished = true;
          client.off('error', onError);
          client.release(broken ?? undefined);
        }
      },
      listen,
      get listening() {
        return listening;
      },
      close,
    };
  });
}
