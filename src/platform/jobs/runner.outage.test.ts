import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitUntil } from '../../../test/wait';
import type { Db, Queryable } from '../db/port';
import { enqueue, type Job } from './jobs.repo';
import { openTestDb, type TestDb } from './jobs.test-kit';
import { createJobRunner } from './runner';

/**
 * A storage outage is the database's failure, never the job's: the runner waits it out (claims,
 * results) and a handler that fails because the database is gone gets its attempt back.
 */
let t: TestDb;
beforeAll(async () => {
  t = await openTestDb();
});
afterAll(() => t.close());

const refused = () =>
  Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });

/** The real database behind a switch: while `down`, every statement fails as if the server were gone. */
function flakyDb(db: Db) {
  /** `refused`: each statement refused while down (a transaction as `BEGIN`). */
  const state = { down: false, refusedCalls: 0, refused: [] as string[] };
  const guard = <T>(sql: string, run: () => Promise<T>): Promise<T> => {
    if (state.down) {
      state.refusedCalls++;
      state.refused.push(sql);
      return Promise.reject(refused());
    }
    return run();
  };
  const wrap = (q: Queryable): Queryable => ({
    query: (sql, params) => guard(sql, () => q.query(sql, params)),
    exec: (sql) => guard(sql, () => q.exec(sql)),
  });
  const flaky: Db = {
    ...wrap(db),
    engine: db.engine,
    laneName: 'foreground',
    foregroundSeenAt: () => Number.NEGATIVE_INFINITY,
    interactiveSeenAt: () => Number.NEGATIVE_INFINITY,
    lane() {
      return this;
    },
    transaction: (fn) => guard('BEGIN', () => db.transaction((tx) => fn(wrap(tx)))),
    listen: (c, h, l) => db.listen(c, h, l),
    get listening() {
      return db.listening;
    },
    close: () => db.close(),
  };
  return { db: flaky, state };
}

const getJob = async (id: string) =>
  (await t.db.query<Job>('SELECT * FROM jobs WHERE id = $1', [id])).rows[0]!;

describe('the job runner during a storage outage', () => {
  it('keeps polling through an outage without crashing, and runs the job once storage is back', async () => {
    const { db, state } = flakyDb(t.db);
    const r = createJobRunner({ db, pollMs: 20, outageCapMs: 100 });
    let ran = 0;
    r.register('outage-claim', async () => {
      ran++;
    });
    state.down = true;
    r.start();
    const { id } = await enqueue(t.db, { queue: 'outage-claim', maxAttempts: 1 });
    // Three refused claims: it kept polling through the outage, and is still there to see it end.
    await waitUntil(() => state.refusedCalls > 2, { what: 'three claims refused during the outage' });
    expect(ran).toBe(0);
    state.down = false;
    await waitUntil(async () => (await getJob(id)).state === 'succeeded', { what: 'the job to succeed' });
    expect(ran).toBe(1);
    await r.stop();
  });

  it('does not count a handler that failed because storage was down, even on its last attempt', async () => {
    const { db } = flakyDb(t.db);
    const r = createJobRunner({ db, pollMs: 20 });
    let calls = 0;
    r.register(
      'outage-handler',
      async () => {
        calls++;
        if (calls === 1) throw refused();
      },
      { backoff: { baseMs: 10, capMs: 10 } },
    );
    const { id } = await enqueue(t.db, { queue: 'outage-handler', maxAttempts: 1 });
    r.start();
    await waitUntil(() => calls === 1, { what: 'the first call of the handler' });
    await waitUntil(async () => (await getJob(id)).state !== 'running', { what: 'the job to leave running' });
    expect(await getJob(id)).toMatchObject({ state: 'queued', attempts: 0 });
    // Given back with a short pause; then it runs and succeeds on its one and only counted attempt.
    await waitUntil(async () => (await getJob(id)).state === 'succeeded', {
      what: 'the job to succeed',
      timeoutMs: 15_000,
    });
    expect(await getJob(id)).toMatchObject({ attempts: 1 });
    await r.stop();
  });

  it('holds on to a finished job through an outage and records it once storage is back', async () => {
    const { db, state } = flakyDb(t.db);
    const r = createJobRunner({ db, pollMs: 20, outageCapMs: 100 });
    r.register('outage-result', async () => {
      state.down = true; // the database goes away while the job runs
    });
    const { id } = await enqueue(t.db, { queue: 'outage-result', maxAttempts: 1 });
    r.start();
    await waitUntil(() => state.down, { what: 'the job to run' });
    // Its result was refused twice (written, refused, written again): it is held, not dropped.
    const resultWrites = () => state.refused.filter((sql) => sql.includes("SET state = 'succeeded'")).length;
    await waitUntil(() => resultWrites() >= 2, { what: 'two refused writes of the result' });
    expect((await getJob(id)).state).toBe('running');
    state.down = false;
    await waitUntil(async () => (await getJob(id)).state === 'succeeded', {
      what: 'the result to be recorded',
    });
    expect(await getJob(id)).toMatchObject({ attempts: 1, last_error: null });
    await r.stop();
  });
});
