import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropSchema, freshSchemaName } from '../../../test/harness';
import { appliesWhen, onlyOn } from '../../../test/skips';
import { letTimePass, waitUntil } from '../../../test/wait';
import { notify } from './notify';
import { createPgliteDb } from './pglite';
import { type Db, isUniqueViolation } from './port';
import { createPostgresDb } from './postgres';

/**
 * The storage port's contract, run against every adapter of the engine under test: PGlite in a
 * worker thread and in-process without DATABASE_URL, PostgreSQL with it. Code above the port relies
 * on exactly these behaviours, so an adapter that passes here can replace another.
 */
const url = process.env.DATABASE_URL;
const schema = freshSchemaName();

const adapters: Array<[string, () => Promise<Db>]> = url
  ? [['postgres', () => createPostgresDb({ url, schema })]]
  : [
      ['pglite (worker thread)', () => createPgliteDb({ dataDir: null })],
      ['pglite (in-process)', () => createPgliteDb({ dataDir: null, inProcess: true })],
    ];

afterAll(async () => {
  if (url) await dropSchema(url, schema);
});

describe.each(adapters)('the %s adapter', (name, open) => {
  let db: Db;
  let closed = false;
  beforeAll(async () => {
    db = await open();
    await db.exec(`
      DROP TABLE IF EXISTS port_items, port_counter;
      CREATE TABLE port_items (id bigserial PRIMARY KEY, name text UNIQUE NOT NULL, tags text[] NOT NULL DEFAULT '{}');
      CREATE TABLE port_counter (id int PRIMARY KEY, n int8 NOT NULL);
      INSERT INTO port_counter VALUES (1, 0);
    `);
  });
  afterAll(async () => {
    if (!closed) await db.close();
  });

  it('returns int8 and numeric as numbers, timestamptz as a Date and booleans as booleans', async () => {
    const { rows } = await db.query<{ big: number; money: number; at: Date; yes: boolean; nothing: null }>(
      `SELECT 9007199254740991::int8 AS big, 12.34::numeric AS money,
              '2024-05-06T07:08:09.123Z'::timestamptz AS at, true AS yes, NULL AS nothing`,
    );
    expect(rows).toEqual([
      {
        big: 9007199254740991,
        money: 12.34,
        at: new Date('2024-05-06T07:08:09.123Z'),
        yes: true,
        nothing: null,
      },
    ]);
    expect(rows[0]!.at).toBeInstanceOf(Date);
  });

  it('round-trips jsonb passed as JSON text with an explicit cast', async () => {
    const doc = { a: 1, nested: { list: [1, 'two', null], ok: true }, text: 'é "quoted"' };
    const { rows } = await db.query<{ doc: unknown }>('SELECT $1::jsonb AS doc', [JSON.stringify(doc)]);
    expect(rows[0]!.doc).toEqual(doc);
  });

  it('passes text[] parameters and returns text[] columns as arrays', async () => {
    const { rows } = await db.query<{ tags: string[] }>(
      'INSERT INTO port_items (name, tags) VALUES ($1, $2::text[]) RETURNING tags',
      ['arrays', ['a', 'b,c', 'd "e"', '']],
    );
    expect(rows[0]!.tags).toEqual(['a', 'b,c', 'd "e"', '']);
  });

  it('binds null, Date and number parameters', async () => {
    const at = new Date('2020-01-02T03:04:05.678Z');
    const { rows } = await db.query<{ a: null; b: Date; c: number }>(
      'SELECT $1::text AS a, $2::timestamptz AS b, $3::int8 + 1 AS c',
      [null, at, 41],
    );
    expect(rows[0]).toEqual({ a: null, b: at, c: 42 });
  });

  it('counts affected rows for INSERT, UPDATE and SELECT', async () => {
    const ins = await db.query("INSERT INTO port_items (name) VALUES ('c1'), ('c2'), ('c3')");
    expect(ins.rowCount).toBe(3);
    const upd = await db.query("UPDATE port_items SET tags = '{x}' WHERE name IN ('c1', 'c2')");
    expect(upd.rowCount).toBe(2);
    const sel = await db.query("SELECT * FROM port_items WHERE name LIKE 'c%'");
    expect(sel.rowCount).toBe(3);
  });

  it('rejects with the PostgreSQL error code, so a unique violation is recognisable', async () => {
    await db.query("INSERT INTO port_items (name) VALUES ('dup')");
    const err = await db.query("INSERT INTO port_items (name) VALUES ('dup')").catch((e: unknown) => e);
    expect(isUniqueViolation(err)).toBe(true);
    expect((err as Error).message).toMatch(/duplicate key/);
    await expect(db.query('SELEC 1')).rejects.toMatchObject({ code: '42601' });
  });

  it('keeps working after an error (the connection is not left broken)', async () => {
    await db.query('SELECT 1/0').catch(() => {});
    const { rows } = await db.query<{ one: number }>('SELECT 1 AS one');
    expect(rows).toEqual([{ one: 1 }]);
  });

  it('runs the same statement with many different parameter sets, and many distinct statements', async () => {
    for (let i = 0; i < 50; i++) {
      const { rows } = await db.query<{ v: number }>('SELECT $1::int * 2 AS v', [i]);
      expect(rows[0]!.v).toBe(i * 2);
    }
    // More distinct texts than any statement cache keeps.
    for (let i = 0; i < 300; i++) {
      const { rows } = await db.query<{ v: number }>(`SELECT ${i} + $1::int AS v`, [1]);
      expect(rows[0]!.v).toBe(i + 1);
    }
  });

  it('sees the new shape of a table after it changes', async () => {
    await db.exec('CREATE TABLE port_shape (a int); INSERT INTO port_shape VALUES (1)');
    expect((await db.query('SELECT * FROM port_shape')).rows).toEqual([{ a: 1 }]);
    await db.exec('ALTER TABLE port_shape ADD COLUMN b text');
    expect((await db.query('SELECT * FROM port_shape')).rows).toEqual([{ a: 1, b: null }]);
  });

  it('runs a multi-statement script with exec, and rejects a script that fails', async () => {
    await db.exec(`
      CREATE TABLE port_script (v int);
      INSERT INTO port_script VALUES (1);
      INSERT INTO port_script VALUES (2);
    `);
    expect((await db.query('SELECT sum(v)::int AS s FROM port_script')).rows).toEqual([{ s: 3 }]);
    await expect(
      db.exec('INSERT INTO port_script VALUES (3); SELECT * FROM no_such_table'),
    ).rejects.toMatchObject({
      code: '42P01',
    });
  });

  it('commits a transaction and returns what its function returned', async () => {
    const id = await db.transaction(async (tx) => {
      const { rows } = await tx.query<{ id: number }>(
        "INSERT INTO port_items (name) VALUES ('tx-ok') RETURNING id",
      );
      await tx.exec("INSERT INTO port_items (name) VALUES ('tx-ok-2')");
      return rows[0]!.id;
    });
    expect(typeof id).toBe('number');
    const { rows } = await db.query("SELECT name FROM port_items WHERE name LIKE 'tx-ok%' ORDER BY name");
    expect(rows).toEqual([{ name: 'tx-ok' }, { name: 'tx-ok-2' }]);
  });

  it('rolls back everything and rethrows when the function throws', async () => {
    const boom = new Error('boom');
    await expect(
      db.transaction(async (tx) => {
        await tx.query("INSERT INTO port_items (name) VALUES ('tx-rollback')");
        throw boom;
      }),
    ).rejects.toBe(boom);
    expect((await db.query("SELECT 1 FROM port_items WHERE name = 'tx-rollback'")).rows).toEqual([]);
  });

  it('rolls back when a statement inside fails, and the connection stays usable', async () => {
    const err = await db
      .transaction(async (tx) => {
        await tx.query("INSERT INTO port_items (name) VALUES ('tx-fail')");
        await tx.query("INSERT INTO port_items (name) VALUES ('dup')");
      })
      .catch((e: unknown) => e);
    expect(isUniqueViolation(err)).toBe(true);
    expect((await db.query("SELECT 1 FROM port_items WHERE name = 'tx-fail'")).rows).toEqual([]);
    expect((await db.query('SELECT 1 AS ok')).rows).toEqual([{ ok: 1 }]);
  });

  it('serializes concurrent read-modify-write transactions without losing an update', async () => {
    const before = (await db.query<{ n: number }>('SELECT n FROM port_counter WHERE id = 1')).rows[0]!.n;
    await Promise.all(
      Array.from({ length: 20 }, () =>
        db.transaction(async (tx) => {
          const { rows } = await tx.query<{ n: number }>(
            'SELECT n FROM port_counter WHERE id = 1 FOR UPDATE',
          );
          await letTimePass(1, 'hold the row lock while the others queue for it');
          await tx.query('UPDATE port_counter SET n = $1 WHERE id = 1', [rows[0]!.n + 1]);
        }),
      ),
    );
    const after = (await db.query<{ n: number }>('SELECT n FROM port_counter WHERE id = 1')).rows[0]!.n;
    expect(after).toBe(before + 20);
  });

  it('refuses statements on a transaction handle after the transaction ended', async () => {
    let leaked: { query: Db['query'] } | null = null;
    await db.transaction(async (tx) => {
      leaked = tx;
    });
    await expect(leaked!.query('SELECT 1')).rejects.toThrow(/finished/);
  });

  it('delivers notifications to listeners, from a transaction only once it commits', async () => {
    const got: string[] = [];
    const unlisten = await db.listen('port_channel', (p) => got.push(p));
    await notify(db, 'port_channel', 'direct');
    await waitUntil(() => got.length >= 1, { what: 'the direct notification', timeoutMs: 3000 });
    expect(got).toEqual(['direct']);

    await db
      .transaction(async (tx) => {
        await notify(tx, 'port_channel', 'rolled back');
        throw new Error('no');
      })
      .catch(() => {});
    await db.transaction(async (tx) => {
      await notify(tx, 'port_channel', 'committed');
      // No statement can mark this one's absence from inside the transaction (PGlite has one
      // connection), so it gets the time a delivered notification takes, with room to spare.
      await letTimePass(20, 'a notification sent before COMMIT would arrive within this');
      expect(got).toEqual(['direct']);
    });
    await waitUntil(() => got.length >= 2, { what: 'the committed notification', timeoutMs: 3000 });
    expect(got).toEqual(['direct', 'committed']);

    // After unlisten: a notification on a channel still listened to, sent after the one that must
    // not arrive, marks when that one would have come (each listener hears them in order).
    const marks: string[] = [];
    const unlistenMark = await db.listen('port_mark', (p) => marks.push(p));
    await unlisten();
    await notify(db, 'port_channel', 'after unlisten');
    await notify(db, 'port_mark', 'sent after it');
    await waitUntil(() => marks.length >= 1, { what: 'the marking notification', timeoutMs: 3000 });
    await unlistenMark();
    expect(got).toEqual(['direct', 'committed']);
    expect(db.listening).toBe(true);
  });

  const inWorker = appliesWhen(name.includes('worker'), 'only the worker-thread adapter keeps the loop free');
  inWorker.it('keeps the event loop free while a long statement runs', async () => {
    const started = Date.now();
    const long = db.query('SELECT pg_sleep(0.5)');
    // Timers keep firing on time while the worker thread computes.
    let worstLag = 0;
    let ticks = 0;
    let last = Date.now();
    const timer = setInterval(() => {
      const now = Date.now();
      worstLag = Math.max(worstLag, now - last - 10);
      last = now;
      ticks++;
    }, 10);
    await long;
    clearInterval(timer);
    expect(Date.now() - started).toBeGreaterThanOrEqual(500);
    expect(ticks).toBeGreaterThan(10);
    // On the main thread the statement would hold every timer for its whole 500 ms. The bound leaves
    // room for the scheduler of a busy 2-core machine running other test files in parallel.
    expect(worstLag).toBeLessThan(250);
  });

  // Last: it closes the adapter the other tests used.
  it('serves every lane from one database: what one lane writes, the others read', async () => {
    await db
      .lane('analytics')
      .transaction((tx) => tx.query("INSERT INTO port_items (name) VALUES ('lanes')"));
    const { rows } = await db
      .lane('worker')
      .query<{ n: number }>("SELECT count(*)::int AS n FROM port_items WHERE name = 'lanes'");
    expect(rows[0]!.n).toBe(1);
    expect([db.laneName, db.lane('analytics').laneName, db.lane('analytics').lane('foreground')]).toEqual([
      'foreground',
      'analytics',
      db,
    ]);
  });

  onlyOn('pglite', 'PostgreSQL gives lanes pools, not places in one queue').it(
    'queues the lanes for the one connection foreground first, then worker, then analytics',
    async () => {
      const order: string[] = [];
      let letGo!: () => void;
      const held = new Promise<void>((r) => {
        letGo = r;
      });
      let holding!: () => void;
      const isHeld = new Promise<void>((r) => {
        holding = r;
      });
      const holder = db.lane('analytics').transaction(async () => {
        holding();
        await held;
      });
      await isHeld;
      const run = (lane: 'foreground' | 'worker' | 'analytics', tag: string) =>
        db
          .lane(lane)
          .query('SELECT 1')
          .then(() => order.push(tag));
      const queued = [
        run('analytics', 'a1'),
        run('worker', 'w1'),
        run('foreground', 'f1'),
        run('analytics', 'a2'),
      ];
      letGo();
      await holder;
      await Promise.all(queued);
      expect(order).toEqual(['f1', 'w1', 'a1', 'a2']);
    },
  );

  it('refuses statements once closed', async () => {
    await db.close();
    closed = true;
    await expect(db.query('SELECT 1')).rejects.toThrow();
  });
});
