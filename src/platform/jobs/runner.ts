import { randomBytes } from 'node:crypto';
import { isStorageUnavailable } from '../db/errors';
import type { Lane } from '../db/port';
import { createLogger, describeError } from '../logger';
import { type BackoffPolicy, backoffMs, DEFAULT_BACKOFF } from './backoff';
import { claimJobs, completeJob, failJob, type Job, MAX_RESULT_BYTES, releaseJobs } from './jobs.repo';
import type { JobHandler, JobRunner, JobRunnerDeps } from './runner.types';
import { materializeDueSchedules, upsertSchedule } from './schedules.repo';

export type { JobContext, JobHandler, JobRunner, JobRunnerDeps, QueueOptions } from './runner.types';

interface Running {
  job: Job;
  token: string;
  abort: AbortController;
  done: Promise<void>;
  released: boolean;
}

export const MIN_TIMEOUT_MS = 100;
export const MAX_TIMEOUT_MS = 3_600_000;
/** Most slots a queue of its own may have in one process. */
export const MAX_CONCURRENCY = 256;
const SHARED_POOL = 'shared';

interface Pool {
  limit: number;
  running: number;
  byWorkspace: Map<string, number>;
}

const newPool = (limit: number): Pool => ({ limit, running: 0, byWorkspace: new Map() });

/** The most slots of a pool one workspace may hold: half of them (at least one). */
export const fairShare = (limit: number): number => Math.max(1, Math.floor(limit / 2));

export function createJobRunner(deps: JobRunnerDeps): JobRunner {
  // The runner's own statements (claims, results, schedules) are the worker lane's.
  const db = deps.db.lane('worker');
  const log = deps.log ?? createLogger('silent');
  const concurrency = deps.concurrency ?? 4;
  const pollMs = deps.pollMs ?? 500;
  const scheduleEveryMs = deps.scheduleEveryMs ?? 1_000;
  const graceMs = deps.leaseGraceMs ?? 5_000;
  const outagePolicy = { baseMs: Math.min(pollMs, 1_000) * 2, capMs: deps.outageCapMs ?? 30_000 };
  const runnerId = randomBytes(6).toString('hex');
  const queues = new Map<
    string,
    { handler: JobHandler; timeoutMs: number; backoff: BackoffPolicy; pool: string; lane: Lane }
  >();
  /**
   * Slots per pool: the shared one (every queue without a concurrency of its own) and one per such
   * queue, with the jobs each workspace runs in it: a workspace gets at most half a pool's slots
   * (fairShare), so another workspace's job always finds one.
   */
  const pools = new Map<string, Pool>([[SHARED_POOL, newPool(concurrency)]]);
  const scheduleNames = new Set<string>();
  const inflight = new Map<string, Running>();
  let claimSeq = 0;
  let state: 'idle' | 'running' | 'stopping' | 'stopped' = 'idle';
  let loopDone: Promise<void> = Promise.resolve();
  let wakeUp: (() => void) | null = null;
  /** A wake() that came while the loop was not paused: the next pause returns at once. */
  let woken = false;

  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      if (woken) {
        woken = false;
        return resolve();
      }
      const t = setTimeout(done, ms);
      function done() {
        clearTimeout(t);
        wakeUp = null;
        woken = false;
        resolve();
      }
      wakeUp = done;
    });

  async function loop(): Promise<void> {
    let failures = 0;
    let nextScheduleAt = 0;
    while (state === 'running') {
      try {
        if (scheduleNames.size > 0 && Date.now() >= nextScheduleAt) {
          nextScheduleAt = Date.now() + scheduleEveryMs;
          await materializeDueSchedules(db, [...scheduleNames]);
        }
        // One claim per pool with a free slot; each pool's queues compete only among themselves, so
        // a queue with slots of its own (webhook attempts) never waits behind long jobs elsewhere.
        let more = false;
        for (const [name, pool] of pools) {
          const free = pool.limit - pool.running;
          const members = [...queues].filter(([, q]) => q.pool === name);
          if (free <= 0 || members.length === 0) continue;
          const token = `${runnerId}.${++claimSeq}`;
          const leases = members.map(([queue, q]) => ({ queue, leaseMs: q.timeoutMs + graceMs }));
          const claimed = await claimJobs(db, token, leases, free, {
            share: fairShare(pool.limit),
            running: pool.byWorkspace,
          });
          for (const job of claimed) startJob(job, token);
          // A full batch may mean more is due, and short jobs may have freed slots meanwhile; a
          // partial one may have stopped at a workspace's share, with other workspaces' jobs behind.
          if (claimed.length > 0 && pool.running < pool.limit) more = true;
        }
        failures = 0;
        // A pool that filled up wakes the loop when one of its jobs ends (startJob).
        if (!more) await pause(pollMs);
      } catch (err) {
        failures++;
        const unavailable = isStorageUnavailable(err);
        log.warn(
          { err, failures },
          unavailable ? 'jobs: storage unavailable, retrying' : 'jobs: claim failed, retrying',
        );
        await pause(outagePolicy.baseMs / 2 + backoffMs(failures, outagePolicy));
      }
    }
  }

  function startJob(job: Job, token: string): void {
    const r: Running = { job, token, abort: new AbortController(), done: Promise.resolve(), released: false };
    inflight.set(job.id, r);
    const pool = pools.get(queues.get(job.queue)!.pool)!;
    pool.running++;
    const ws = job.workspace_id;
    if (ws) pool.byWorkspace.set(ws, (pool.byWorkspace.get(ws) ?? 0) + 1);
    r.done = runJob(r)
      .catch((err: unknown) => log.error({ err, job_id: job.id }, 'jobs: bookkeeping failed'))
      .finally(() => {
        inflight.delete(job.id);
        if (ws) {
          const left = (pool.byWorkspace.get(ws) ?? 1) - 1;
          if (left > 0) pool.byWorkspace.set(ws, left);
          else pool.byWorkspace.delete(ws);
        }
        // A slot of a full pool came free: claim at once rather than after the poll interval (if
        // the loop is claiming right now, its next pause returns at once).
        if (pool.running-- === pool.limit) {
          woken = true;
          wakeUp?.();
        }
      });
  }

  async function runJob(r: Running): Promise<void> {
    const { job, token } = r;
    const q = queues.get(job.queue)!;
    if (job.attempts > job.max_attempts) {
      // Its last attempt's worker died (the lease ran out): no attempt is left to run.
      const why = `lease expired on attempt ${job.max_attempts}${job.last_error ? `; last error: ${job.last_error}` : ''}`;
      await persist(r, () => failJob(db, job.id, token, why, 0, true));
      log.error({ job_id: job.id, queue: job.queue }, 'jobs: dead letter (worker lost)');
      return;
    }
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), q.timeoutMs);
    });
    let error: unknown = null;
    let result: string | null = null;
    const report = (value: unknown) => {
      result = value === undefined ? null : JSON.stringify(value);
      if (result !== null && Buffer.byteLength(result) > MAX_RESULT_BYTES) {
        result = JSON.stringify({ truncated: `a report of more than ${MAX_RESULT_BYTES} bytes` });
      }
    };
    try {
      const work = Promise.resolve().then(() =>
        q.handler(job.payload, { job, signal: r.abort.signal, db: deps.db.lane(q.lane), report }),
      );
      work.catch(() => {}); // a handler still running after its timeout may fail later, unobserved
      if ((await Promise.race([work, timedOut])) === 'timeout') {
        error = new Error(`timed out after ${q.timeoutMs} ms`);
        r.abort.abort(error);
      }
    } catch (err) {
      error = err;
    } finally {
      clearTimeout(timer);
    }
    if (r.released) return;
    if (error === null) {
      await persist(r, () => completeJob(db, job.id, token, result));
      return;
    }
    if (isStorageUnavailable(error)) {
      // The database failed, not the job: give it back without counting the attempt.
      log.warn(
        { err: error, job_id: job.id, queue: job.queue },
        'jobs: storage unavailable during job, requeued',
      );
      await persist(r, () => releaseJobs(db, [{ id: job.id, token }], backoffMs(1, q.backoff) + 1_000));
      return;
    }
    const permanent = (error as { retryable?: unknown } | null)?.retryable === false;
    const delay = backoffMs(job.attempts, q.backoff);
    const state = await persist(r, () => failJob(db, job.id, token, describeError(error), delay, permanent));
    const fields = { err: error, job_id: job.id, queue: job.queue, attempt: job.attempts };
    if (state === 'dead') log.error(fields, 'jobs: dead letter');
    else log.warn({ ...fields, retry_in_ms: delay }, 'jobs: attempt failed, will retry');
  }

  /** Writes a job's outcome, retrying through a storage outage until the write lands or stop gives up. */
  async function persist<T>(r: Running, write: () => Promise<T>): Promise<T | null> {
    for (let failures = 1; ; failures++) {
      try {
        return await write();
      } catch (err) {
        if (!isStorageUnavailable(err) || r.released) throw err;
        log.warn({ err, job_id: r.job.id }, 'jobs: storage unavailable while recording a result, retrying');
        await new Promise((res) =>
          setTimeout(res, outagePolicy.baseMs / 2 + backoffMs(failures, outagePolicy)),
        );
      }
    }
  }

  return {
    register(queue, handler, opts = {}) {
      if (queues.has(queue)) throw new Error(`queue "${queue}" already has a handler`);
      const timeoutMs = opts.timeoutMs ?? 30_000;
      if (!(timeoutMs >= MIN_TIMEOUT_MS && timeoutMs <= MAX_TIMEOUT_MS)) {
        throw new RangeError(`timeoutMs must be from ${MIN_TIMEOUT_MS} to ${MAX_TIMEOUT_MS}`);
      }
      let pool = SHARED_POOL;
      if (opts.concurrency !== undefined) {
        if (
          !(
            Number.isInteger(opts.concurrency) &&
            opts.concurrency >= 1 &&
            opts.concurrency <= MAX_CONCURRENCY
          )
        ) {
          throw new RangeError(`concurrency must be an integer from 1 to ${MAX_CONCURRENCY}`);
        }
        pool = `queue:${queue}`;
        pools.set(pool, newPool(opts.concurrency));
      }
      queues.set(queue, {
        handler: handler as JobHandler,
        timeoutMs,
        backoff: opts.backoff ?? DEFAULT_BACKOFF,
        pool,
        lane: opts.lane ?? 'worker',
      });
    },
    async schedule(name, spec, queue, payload = {}) {
      await upsertSchedule(db, { name, spec, queue, payload });
      scheduleNames.add(name);
    },
    start() {
      if (state !== 'idle') throw new Error(`the job runner is ${state}`);
      state = 'running';
      loopDone = loop();
    },
    async stop(opts = {}) {
      if (state !== 'running') {
        state = 'stopped';
        return { finished: 0, released: 0 };
      }
      state = 'stopping';
      // As wake() does: a loop in the middle of a claim would otherwise sleep out a whole poll
      // interval before it sees the stop (half a second of every shutdown, measured).
      woken = true;
      wakeUp?.();
      await loopDone;
      const running = [...inflight.values()];
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<void>((res) => {
        timer = setTimeout(res, opts.drainMs ?? 10_000);
      });
      await Promise.race([Promise.all(running.map((r) => r.done)), deadline]);
      clearTimeout(timer);
      const left = [...inflight.values()];
      let released = 0;
      if (left.length > 0) {
        for (const r of left) {
          r.released = true;
          r.abort.abort(new Error('the job runner is shutting down'));
        }
        released = await releaseJobs(
          db,
          left.map((r) => ({ id: r.job.id, token: r.token })),
        ).catch((err: unknown) => {
          // Their leases run out and another process takes them over: nothing is lost.
          log.error({ err, jobs: left.length }, 'jobs: could not release unfinished jobs');
          return 0;
        });
        log.warn({ released, jobs: left.map((r) => r.job.id) }, 'jobs: released unfinished jobs at shutdown');
      }
      state = 'stopped';
      return { finished: running.length - left.length, released };
    },
    wake() {
      woken = true;
      wakeUp?.();
    },
    get active() {
      return inflight.size;
    },
  };
}
