import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { letTimePass, waitUntil } from '../../../test/wait';
import type { Db } from '../db/port';
import { enqueue, type Job } from './jobs.repo';
import { openTestDb, type TestDb } from './jobs.test-kit';
import { jobCounts, listJobs } from './jobs.view';
import { createJobRunner, type JobRunner, type JobRunnerDeps } from './runner';

/** The job runner against the engine under test (PGlite, or PostgreSQL with DATABASE_URL). */
let t: TestDb;
let db: Db;
const runners: JobRunner[] = [];

beforeAll(async () => {
  t = await openTestDb();
  db = t.db;
});
afterEach(async () => {
  await Promise.all(runners.splice(0).map((r) => r.stop({ drainMs: 100 })));
});
afterAll(() => t.close());

const fast = { baseMs: 20, capMs: 50 };
function runner(deps: Partial<JobRunnerDeps> = {}): JobRunner {
  const r = createJobRunner({ db, pollMs: 20, scheduleEveryMs: 50, leaseGraceMs: 200, ...deps });
  runners.push(r);
  return r;
}
const getJob = async (id: string) => (await db.query<Job>('SELECT * FROM jobs WHERE id = $1', [id])).rows[0]!;
const settled = (id: string) =>
  waitUntil(async () => ['succeeded', 'dead'].includes((await getJob(id)).state), {
    what: `job ${id} to succeed or die`,
  });
let n = 0;
const queue = () => `q${++n}`;

describe('the job runner', () => {
  it('retries a failing job until it succeeds, keeping the last error', async () => {
    const q = queue();
    const r = runner();
    let calls = 0;
    r.register(
      q,
      async () => {
        calls++;
        if (calls < 3) throw new Error(`flaky ${calls}`);
      },
      { backoff: fast },
    );
    const { id } = await enqueue(db, { queue: q, payload: { a: 1 } });
    r.start();
    await settled(id);
    expect(await getJob(id)).toMatchObject({ state: 'succeeded', attempts: 3, last_error: 'Error: flaky 2' });
  });

  it('keeps what a job reported when it succeeds, for cdp jobs to show', async () => {
    const q = queue();
    const r = runner();
    r.register(q, async (_payload, { report }) => {
      report({ removed: { events: 1 } });
      report({ removed: { events: 2 } });
    });
    r.register(`${q}.big`, async (_payload, { report }) => report({ text: 'x'.repeat(20_000) }));
    const { id } = await enqueue(db, { queue: q });
    const big = await enqueue(db, { queue: `${q}.big` });
    r.start();
    await settled(id);
    await settled(big.id);
    expect(await getJob(id)).toMatchObject({ state: 'succeeded', result: { removed: { events: 2 } } });
    expect((await getJob(big.id)).result).toEqual({ truncated: 'a report of more than 16384 bytes' });
  });

  it('dead-letters a job after its last attempt, with the last error', async () => {
    const q = queue();
    const r = runner();
    let calls = 0;
    r.register(
      q,
      async () => {
        throw new Error(`boom ${++calls}`);
      },
      { backoff: fast },
    );
    const { id } = await enqueue(db, { queue: q, maxAttempts: 3 });
    r.start();
    await settled(id);
    // Stopped, it runs nothing more: a fourth call would have had to start before this.
    await r.stop();
    expect(calls).toBe(3);
    expect(await getJob(id)).toMatchObject({ state: 'dead', attempts: 3, last_error: 'Error: boom 3' });
  });

  it('dead-letters at once when the handler says retrying cannot help', async () => {
    const q = queue();
    const r = runner();
    r.register(q, async () => {
      throw Object.assign(new Error('410 Gone'), { retryable: false });
    });
    const { id } = await enqueue(db, { queue: q, maxAttempts: 5 });
    r.start();
    await settled(id);
    expect(await getJob(id)).toMatchObject({ state: 'dead', attempts: 1, last_error: 'Error: 410 Gone' });
  });

  it('aborts a hung handler at its timeout, counts the attempt as failed and retries', async () => {
    const q = queue();
    const r = runner();
    const signals: AbortSignal[] = [];
    r.register(
      q,
      async (_p, { signal, job }) => {
        signals.push(signal);
        if (job.attempts === 1) await new Promise(() => {}); // hangs and ignores its signal
      },
      { timeoutMs: 200, backoff: fast },
    );
    const { id } = await enqueue(db, { queue: q });
    r.start();
    await settled(id);
    expect(await getJob(id)).toMatchObject({
      state: 'succeeded',
      attempts: 2,
      last_error: 'Error: timed out after 200 ms',
    });
    expect(signals[0]!.aborted).toBe(true);
  });

  it('runs a job again when its worker died holding it (lease expired)', async () => {
    const q = queue();
    const { id } = await enqueue(db, { queue: q });
    await db.query(
      `UPDATE jobs SET state = 'running', attempts = 1, locked_by = 'dead-worker',
         locked_until = now() - interval '1 second' WHERE id = $1`,
      [id],
    );
    const r = runner();
    r.register(q, async () => {});
    r.start();
    await settled(id);
    expect(await getJob(id)).toMatchObject({ state: 'succeeded', attempts: 2 });
  });

  it('dead-letters a job whose worker died on its last attempt, without running it again', async () => {
    const q = queue();
    const { id } = await enqueue(db, { queue: q, maxAttempts: 2 });
    await db.query(
      `UPDATE jobs SET state = 'running', attempts = 2, locked_by = 'dead-worker', last_error = 'Error: oops',
         locked_until = now() - interval '1 second' WHERE id = $1`,
      [id],
    );
    let ran = false;
    const r = runner();
    r.register(q, async () => {
      ran = true;
    });
    r.start();
    await settled(id);
    expect(ran).toBe(false);
    expect((await getJob(id)).last_error).toBe('lease expired on attempt 2; last error: Error: oops');
  });

  it('keeps one live job per queue and key, and enqueues nothing when the transaction rolls back', async () => {
    const q = queue();
    const a = await enqueue(db, { queue: q, key: 'segment-7' });
    const b = await enqueue(db, { queue: q, key: 'segment-7' });
    expect(b).toEqual({ id: a.id, created: false });
    await db
      .transaction(async (tx) => {
        await enqueue(tx, { queue: q, key: 'other' });
        throw new Error('rolled back');
      })
      .catch(() => {});
    expect((await listJobs(db, { queue: q })).jobs.map((j) => j.id)).toEqual([a.id]);
    await expect(enqueue(db, { queue: q, payload: 'x'.repeat(300_000) })).rejects.toThrow(RangeError);
    await expect(enqueue(db, { queue: q, maxAttempts: 0 })).rejects.toThrow(RangeError);
  });

  it('runs a schedule once per tick, however many runners share it', async () => {
    const q = queue();
    const seen: string[] = [];
    const [r1, r2] = [runner(), runner({ db: await t.other() })];
    for (const r of [r1, r2]) {
      r.register(q, async (_p, { job }) => {
        seen.push(job.key!);
      });
      await r.schedule(`tick-${q}`, 'every 1s', q, { hello: 'world' });
    }
    r1.start();
    r2.start();
    // Three ticks' jobs ran (each tick makes one job, whichever runner materializes it).
    await waitUntil(() => seen.length >= 3, { what: 'the jobs of three ticks to run', timeoutMs: 15_000 });
    await Promise.all([r1.stop(), r2.stop()]);
    const { jobs } = await listJobs(db, { queue: q });
    expect(jobs.length).toBeGreaterThanOrEqual(2);
    expect(new Set(jobs.map((j) => j.key)).size).toBe(jobs.length);
    expect(seen.sort()).toEqual(jobs.map((j) => j.key).sort());
    expect(jobs.every((j) => (j.payload as { hello: string }).hello === 'world')).toBe(true);
  });

  it('on stop, waits for running jobs to finish', async () => {
    const q = queue();
    const r = runner();
    r.register(q, () => letTimePass(300, 'a job that is still running when stop() is called'));
    const { id } = await enqueue(db, { queue: q });
    r.start();
    await waitUntil(() => r.active === 1, { what: 'the job to start' });
    expect(await r.stop({ drainMs: 5_000 })).toEqual({ finished: 1, released: 0 });
    expect((await getJob(id)).state).toBe('succeeded');
  });

  it('on stop, gives back what does not finish in time, without counting the attempt', async () => {
    const q = queue();
    const r = runner();
    let aborted = false;
    r.register(q, async (_p, { signal }) => {
      await new Promise<void>((resolve) =>
        signal.addEventListener('abort', () => {
          aborted = true;
          resolve(); // a handler that resolves on abort is still not recorded as done
        }),
      );
    });
    const { id } = await enqueue(db, { queue: q });
    r.start();
    await waitUntil(() => r.active === 1, { what: 'the job to start' });
    expect(await r.stop({ drainMs: 100 })).toEqual({ finished: 0, released: 1 });
    expect(aborted).toBe(true);
    // stop() answered after writing the release: the job is back at once.
    expect(await getJob(id)).toMatchObject({ state: 'queued', attempts: 0, locked_by: null });
  });

  it('lists jobs by queue and state in pages, and counts them per state', async () => {
    const q = queue();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await enqueue(db, { queue: q, payload: { i } })).id);
    await db.query(`UPDATE jobs SET state = 'dead', last_error = 'x' WHERE id = $1`, [ids[4]]);
    // Ids sort by creation time (to the millisecond; ties in random order): pages follow id order.
    const queued = ids.slice(0, 4).sort();
    const first = await listJobs(db, { queue: q, state: 'queued', limit: 3 });
    expect(first.jobs.map((j) => j.id)).toEqual(queued.slice(0, 3));
    const second = await listJobs(db, { queue: q, state: 'queued', limit: 3, after: first.next! });
    expect(second).toEqual({ jobs: [expect.objectContaining({ id: queued[3] })], next: null });
    expect(await jobCounts(db, { queue: q })).toEqual({
      [q]: { queued: 4, running: 0, succeeded: 0, dead: 1 },
    });
  });

  it('runs a queue with slots of its own while long jobs fill the shared ones', async () => {
    const [slow, quick] = [queue(), queue()];
    const r = runner({ concurrency: 2 });
    let release!: () => void;
    const held = new Promise<void>((res) => {
      release = res;
    });
    let slowRunning = 0;
    r.register(slow, async () => {
      slowRunning++;
      await held;
    });
    const quickDone: number[] = [];
    r.register(
      quick,
      async () => {
        quickDone.push(Date.now());
      },
      { concurrency: 3 },
    );
    for (let i = 0; i < 4; i++) await enqueue(db, { queue: slow });
    r.start();
    await waitUntil(() => slowRunning === 2, { what: 'two slow jobs to fill the shared slots' });
    for (let i = 0; i < 5; i++) await enqueue(db, { queue: quick });
    // A handler's return comes a moment before its job leaves flight (marked succeeded), so wait
    // for both rather than read `active` in between.
    await waitUntil(() => quickDone.length === 5 && r.active === 2, {
      what: 'the five quick jobs to finish beside the slow ones',
    });
    // The shared slots stayed with the two long jobs; the other two are still waiting for them.
    expect(slowRunning).toBe(2);
    release();
    await waitUntil(() => slowRunning === 4, { what: 'the other two slow jobs to start' });
  });

  it('refuses slots of its own outside 1 to 256', () => {
    const r = runner();
    expect(() => r.register(queue(), async () => {}, { concurrency: 0 })).toThrow(RangeError);
    expect(() => r.register(queue(), async () => {}, { concurrency: 257 })).toThrow(RangeError);
    expect(() => r.register(queue(), async () => {}, { concurrency: 1.5 })).toThrow(RangeError);
  });

  it('claims at once when woken instead of waiting for its next poll', async () => {
    const q = queue();
    let claims = 0;
    const counting: Db = Object.create(db, {
      query: {
        value: async (...args: Parameters<Db['query']>) => {
          const res = await db.query(...args);
          if (args[0].includes("SET state = 'running'")) claims++;
          return res;
        },
      },
      // The runner claims through the worker lane: counted the same.
      lane: { value: () => counting },
    });
    const r = runner({ db: counting, pollMs: 60_000 });
    const ran: string[] = [];
    r.register(q, async (_p, { job }) => {
      ran.push(job.id);
    });
    r.start();
    // The first (empty) claim is done before the job exists; the next poll is a minute away.
    await waitUntil(() => claims === 1, { what: 'the first claim' });
    const { id } = await enqueue(db, { queue: q });
    r.wake();
    await waitUntil(() => ran.includes(id), { what: 'the woken runner to run the job', timeoutMs: 5_000 });
  });

  it('stops at once when told to stop in the middle of a claim, instead of sleeping out its next poll', async () => {
    let inClaim: (() => void) | null = null;
    let claiming!: Promise<void>;
    const claimed = new Promise<void>((resolve) => {
      inClaim = resolve;
    });
    const slow: Db = Object.create(db, {
      query: {
        value: async (...args: Parameters<Db['query']>) => {
          if (args[0].includes("SET state = 'running'") && inClaim) {
            const entered = inClaim;
            inClaim = null;
            claiming = letTimePass(50, 'the claim is still running when the stop comes');
            entered();
            await claiming;
          }
          return db.query(...args);
        },
      },
      lane: { value: () => slow },
    });
    // A poll ten minutes away: a stop that waited for it would outlast the test's timeout.
    const r = createJobRunner({ db: slow, pollMs: 600_000, scheduleEveryMs: 600_000, leaseGraceMs: 200 });
    r.register(queue(), async () => {});
    r.start();
    await claimed;
    expect(await r.stop({ drainMs: 100 })).toEqual({ finished: 0, released: 0 });
  });
});

describe('the job runner’s fair shares', () => {
  const workspace = async (name: string) =>
    (
      await db.query<{ id: string }>(
        'INSERT INTO workspaces (id, name) VALUES (gen_random_uuid(), $1) RETURNING id',
        [name],
      )
    ).rows[0]!.id;

  it('gives a workspace at most half the slots, so another’s job runs while forty of the first wait', async () => {
    const q = queue();
    const r = runner({ concurrency: 4 });
    const [a, b] = [await workspace('busy A'), await workspace('quiet B')];
    const running = new Map<string, number>();
    let most = 0;
    let bStartedWhileAWaited = false;
    let release!: () => void;
    const gate = new Promise<void>((res) => {
      release = res;
    });
    r.register<{ ws: string }>(
      q,
      async ({ ws }) => {
        running.set(ws, (running.get(ws) ?? 0) + 1);
        most = Math.max(most, running.get(a) ?? 0);
        if (ws === b) bStartedWhileAWaited = true;
        if (ws === a) await gate;
        running.set(ws, running.get(ws)! - 1);
      },
      { timeoutMs: 30_000 },
    );
    // A's jobs are all older than B's one.
    for (let i = 0; i < 40; i++) await enqueue(db, { queue: q, workspaceId: a, payload: { ws: a } });
    const { id: bJob } = await enqueue(db, { queue: q, workspaceId: b, payload: { ws: b } });
    r.start();
    await waitUntil(async () => (await getJob(bJob)).state === 'succeeded', {
      what: 'B’s job to run while A’s wait',
      timeoutMs: 30_000,
    });
    expect(bStartedWhileAWaited).toBe(true);
    // A held its share, never every slot.
    expect(most).toBe(2);
    release();
  });
});
