import { createServer, type Server, type Socket } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { dropSchema, freshSchemaName } from '../../../test/harness';
import { onlyOn } from '../../../test/skips';
import { waitUntil } from '../../../test/wait';
import { isStatementTimeout, isStorageUnavailable } from './errors';
import { notify } from './notify';
import type { Db } from './port';
import { createPostgresDb } from './postgres';

/**
 * The PostgreSQL adapter when connections fail (hardening finding 2): a connection that dies, a
 * statement that gets no answer and a server that never answers must each fail the one call
 * quickly, as "storage unavailable", and leave the process and the pool usable. The full outage
 * (the server stopped under load) is test/outage.test.ts.
 */
const url = process.env.DATABASE_URL;

describe('the PostgreSQL adapter against a server that accepts connections but never answers', () => {
  let server: Server;
  const sockets = new Set<Socket>();
  let port = 0;
  beforeAll(async () => {
    server = createServer((s) => {
      sockets.add(s);
      s.on('error', () => {});
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as { port: number }).port;
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => server.close(r));
  });

  it('fails a statement within the connect timeout, as storage unavailable', async () => {
    const db = await createPostgresDb({ url: `postgres://x@127.0.0.1:${port}/x`, connectTimeoutMs: 300 });
    try {
      const t0 = Date.now();
      const err = await db.query('SELECT 1').catch((e: unknown) => e);
      expect(Date.now() - t0).toBeLessThan(2000);
      expect(isStorageUnavailable(err), String(err)).toBe(true);
      const inTx = await db.transaction(async (tx) => tx.query('SELECT 1')).catch((e: unknown) => e);
      expect(isStorageUnavailable(inTx), String(inTx)).toBe(true);
    } finally {
      await db.close();
    }
  });
});

const onPostgres = onlyOn('postgres', 'tests the PostgreSQL adapter against a real server');

onPostgres.describe('the PostgreSQL adapter when a connection dies or hangs', () => {
  const schema = freshSchemaName();
  let db: Db;
  let killer: pg.Client;
  beforeAll(async () => {
    db = await createPostgresDb({ url: url!, schema, queryTimeoutMs: 500, max: 4 });
    killer = new pg.Client({ connectionString: url });
    await killer.connect();
  });
  afterAll(async () => {
    await db?.close();
    await killer?.end();
    await dropSchema(url!, schema);
  });

  const terminate = (pid: number) => killer.query('SELECT pg_terminate_backend($1)', [pid]);

  it('survives its connection dying between two statements of a transaction', async () => {
    // pg emits 'error' on the checked-out client when its socket closes while no statement runs;
    // without a listener that was an uncaught exception, and the process died.
    let errorsEmitted = 0;
    const emit = pg.Client.prototype.emit;
    const spy = vi.spyOn(pg.Client.prototype, 'emit').mockImplementation(function (
      this: pg.Client,
      event: string | symbol,
      ...args: unknown[]
    ) {
      if (event === 'error') errorsEmitted++;
      return emit.call(this, event, ...args);
    });
    const err = await db
      .transaction(async (tx) => {
        const { rows } = await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
        await terminate(rows[0]!.pid);
        // Between two statements: the client hears of it with no statement running.
        await waitUntil(() => errorsEmitted > 0, { what: 'the client to hear its connection die' });
        await tx.query('SELECT 1');
      })
      .catch((e: unknown) => e)
      .finally(() => spy.mockRestore());
    expect(isStorageUnavailable(err), String(err)).toBe(true);
    // The broken connection was destroyed, not pooled: every connection of the pool works.
    const all = await Promise.all(
      Array.from({ length: 8 }, () => db.query<{ one: number }>('SELECT 1 AS one')),
    );
    expect(all.every((r) => r.rows[0]!.one === 1)).toBe(true);
  });

  it('fails a statement that gets no answer after the query timeout, and destroys its connection', async () => {
    const t0 = Date.now();
    const err = await db.query('SELECT pg_sleep(3)').catch((e: unknown) => e);
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(isStorageUnavailable(err), String(err)).toBe(true);

    const inTx = await db
      .transaction(async (tx) => {
        await tx.query('SELECT 1');
        await tx.query('SELECT pg_sleep(3)');
      })
      .catch((e: unknown) => e);
    // No ROLLBACK queued behind the statement that never answered: the call ends at the timeout.
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(isStorageUnavailable(inTx), String(inTx)).toBe(true);
    const all = await Promise.all(Array.from({ length: 8 }, () => db.query('SELECT 1')));
    expect(all).toHaveLength(8);
  });

  it('lets a statement given a longer bound run past the default one (whole-workspace analytics)', async () => {
    const { rows } = await db.query<{ ok: number }>('SELECT 1 AS ok FROM pg_sleep(1)', [], {
      timeoutMs: 5000,
    });
    expect(rows[0]!.ok).toBe(1);
  });

  it('turns JIT compilation off on its connections (it cost more than it saved: decisions.md)', async () => {
    const { rows } = await db.query<{ jit: string }>('SHOW jit');
    expect(rows[0]!.jit).toBe('off');
  });

  it('runs each statement in one backend, on every lane (no parallel workers: decisions.md)', async () => {
    for (const lane of ['foreground', 'worker', 'analytics'] as const) {
      const { rows } = await db
        .lane(lane)
        .query<{ max_parallel_workers_per_gather: string }>('SHOW max_parallel_workers_per_gather');
      expect(rows[0]!.max_parallel_workers_per_gather).toBe('0');
    }
  });

  it('runs scripts (migrations) without the statement time bound', async () => {
    await db.exec('SELECT pg_sleep(0.8)');
  });

  it('listens again after its notification connection was killed', async () => {
    const got: string[] = [];
    let lost = 0;
    await db.listen(
      'pg_adapter_chan',
      (p) => got.push(p),
      () => lost++,
    );
    const { rows } = await killer.query<{ pid: number }>(
      "SELECT pid FROM pg_stat_activity WHERE query LIKE 'LISTEN%pg_adapter_chan%' ORDER BY backend_start DESC LIMIT 1",
    );
    expect(rows).toHaveLength(1);
    await terminate(rows[0]!.pid);
    await waitUntil(() => lost > 0, { what: 'the adapter to report the listener lost', timeoutMs: 1_000 });
    expect(lost).toBe(1);
    expect(db.listening).toBe(false);
    await waitUntil(() => db.listening, { what: 'the adapter to listen again', timeoutMs: 3_000 });
    await notify(db, 'pg_adapter_chan', 'back');
    await waitUntil(() => got.length > 0, { what: 'a notification after the reconnect', timeoutMs: 2_000 });
    expect(got).toEqual(['back']);
  });
});

onPostgres.describe('notification channels of deployments sharing one database', () => {
  const [a, b] = [freshSchemaName(), freshSchemaName()];
  const dbs: Db[] = [];
  const open = async (schema: string | null) => {
    const db = await createPostgresDb({ url: url!, schema, max: 2 });
    dbs.push(db);
    return db;
  };
  afterAll(async () => {
    for (const db of dbs) await db.close();
    for (const s of [a, b]) await dropSchema(url!, s);
  });

  it('reach the processes of the same schema and no other', async () => {
    const [inA, alsoInA, inB] = [await open(a), await open(a), await open(b)];
    const heard = { a: [] as string[], b: [] as string[] };
    await alsoInA.listen('shared_chan', (p) => heard.a.push(p));
    await inB.listen('shared_chan', (p) => heard.b.push(p));
    await notify(inA, 'shared_chan', 'from a');
    // Sent after, heard by b: b would have heard a's first (one connection hears them in order).
    await notify(inB, 'shared_chan', 'from b');
    await waitUntil(() => heard.a.length > 0 && heard.b.length > 0, {
      what: 'both notifications',
      timeoutMs: 3_000,
    });
    expect(heard).toEqual({ a: ['from a'], b: ['from b'] });
  });

  it('are the same for the public schema named or not, so one deployment hears itself', async () => {
    const [unnamed, named] = [await open(null), await open('public')];
    const heard: string[] = [];
    await unnamed.listen('public_chan', (p) => heard.push(p));
    await notify(named, 'public_chan', 'named public');
    await waitUntil(() => heard.length > 0, { what: 'the notification', timeoutMs: 3_000 });
    expect(heard).toEqual(['named public']);
  });
});

onPostgres.describe('the PostgreSQL adapter when several processes start at once', () => {
  it('opens the same new schema from many connections at the same moment', async () => {
    // Each races CREATE SCHEMA IF NOT EXISTS; the losers used to fail on the catalog's unique index.
    const schema = freshSchemaName();
    try {
      const dbs = await Promise.all(Array.from({ length: 8 }, () => createPostgresDb({ url: url!, schema })));
      for (const db of dbs)
        expect((await db.query<{ s: string }>('SELECT current_schema() AS s')).rows[0]?.s).toBe(schema);
      await Promise.all(dbs.map((db) => db.close()));
    } finally {
      await dropSchema(url!, schema);
    }
  });
});

onPostgres.describe('a transaction with a statement budget', () => {
  let db: Db;
  const schema = freshSchemaName();
  beforeAll(async () => {
    db = await createPostgresDb({ url: url!, schema, max: 2 });
  });
  afterAll(async () => {
    await db?.close();
    await dropSchema(url!, schema);
  });

  it('has a statement over its budget cancelled by the server, which stops working on it, and keeps the pool usable', async () => {
    const marker = `budget-test-${schema}`;
    const err = await db
      .transaction((tx) => tx.query(`SELECT pg_sleep(5), '${marker}'`, [], { timeoutMs: 10_000 }), {
        statementTimeoutMs: 100,
      })
      .catch((e: unknown) => e);
    expect(isStatementTimeout(err), String(err)).toBe(true);
    expect(isStorageUnavailable(err)).toBe(false);
    // The server is no longer running it (a client-side timeout would have left it running).
    const { rows } = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE query LIKE '%' || $1 || '%' AND pid <> pg_backend_pid()`,
      [marker],
    );
    expect(rows[0]!.n).toBe(0);
    // Both pooled connections still answer, without the budget (it was local to that transaction).
    const [a, b] = await Promise.all([db.query('SELECT 1 AS x'), db.query('SELECT pg_sleep(0.2), 1 AS x')]);
    expect([a.rows[0], b.rows[0]]).toMatchObject([{ x: 1 }, { x: 1 }]);
  });
});

onPostgres.describe('the analytics lane’s pool', () => {
  let db: Db;
  const schema = freshSchemaName();
  beforeAll(async () => {
    db = await createPostgresDb({ url: url!, schema, max: 2, analyticsMax: 2, connectTimeoutMs: 500 });
  });
  afterAll(async () => {
    await db?.close();
    await dropSchema(url!, schema);
  });

  it('keeps every main connection for requests and workers however much analytics waits for its own', async () => {
    const analytics = db.lane('analytics');
    // Four long analytics statements: two hold the analytics pool, two wait for it.
    const busy = Array.from({ length: 4 }, () =>
      analytics.query('SELECT pg_sleep(1.5)', [], { timeoutMs: 10_000 }).catch((e: unknown) => e),
    );
    const t0 = performance.now();
    const answers = await Promise.all([db.query('SELECT 1 AS x'), db.lane('worker').query('SELECT 2 AS x')]);
    const waited = performance.now() - t0;
    expect(answers.map((a) => a.rows[0])).toEqual([{ x: 1 }, { x: 2 }]);
    // Served at once, not after an analytics statement (1.5 s).
    expect(waited).toBeLessThan(1000);
    // The analytics statements past its pool waited for a connection and gave up (503), not the others.
    const outcomes = await Promise.all(busy);
    expect(outcomes.filter((o) => o instanceof Error).every((e) => isStorageUnavailable(e))).toBe(true);
  });

  it('has the server bound every analytics statement, and no other', async () => {
    const shown = async (d: Db) =>
      (await d.query<{ statement_timeout: string }>('SHOW statement_timeout')).rows[0]!.statement_timeout;
    expect(await shown(db.lane('analytics'))).toBe('1min');
    expect(await shown(db)).toBe('0');
  });
});
