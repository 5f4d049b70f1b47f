import type { Logger } from 'pino';
import type { Db, Lane } from '../db/port';
import type { BackoffPolicy } from './backoff';
import type { Job } from './jobs.repo';

/** The job runner's public shapes (runner.ts implements them). */

export interface JobContext<P = unknown> {
  job: Job<P>;
  /** Aborted at the queue's timeout and when a shutdown gives up waiting; stop work when it fires. */
  signal: AbortSignal;
  db: Db;
  /**
   * What the job did, for operators: stored with the job when it succeeds (`result`, shown by `cdp
   * jobs`); the last call wins. Plain JSON of at most 16 KiB (a larger one is stored as a note).
   */
  report(result: unknown): void;
}

/** Resolves: done. Throws: the attempt failed (an error with `retryable: false` dead-letters at once). */
export type JobHandler<P = unknown> = (payload: P, ctx: JobContext<P>) => Promise<void>;

export interface QueueOptions {
  /** Per attempt, 100 ms – 1 h, default 30 s. */
  timeoutMs?: number;
  backoff?: BackoffPolicy;
  /**
   * Slots of its own: at most this many of the queue's jobs run at once in this process, beside
   * (not out of) the runner's shared `concurrency`. For many short waiting jobs (webhook attempts)
   * that must not queue behind long ones (fits, refreshes), nor take all their slots. 1–256.
   */
  concurrency?: number;
  /**
   * The database lane the handler's `db` runs in (platform/db/port.ts): `analytics` for jobs that
   * walk a whole workspace (segment refreshes, model fits), so they queue behind requests and use
   * their own pool; default `worker`.
   */
  lane?: Lane;
}

export interface JobRunnerDeps {
  db: Db;
  log?: Logger;
  /** Jobs run at once by this process, over all its queues without slots of their own (default 4). */
  concurrency?: number;
  /** Wait between claims when nothing was due (default 500 ms). */
  pollMs?: number;
  /** How often due schedules are turned into jobs (default 1 s). */
  scheduleEveryMs?: number;
  /** A lease lasts the timeout plus this, so a live worker always writes its result first (default 5 s). */
  leaseGraceMs?: number;
  /** Ceiling of the pause after a failed claim (storage outage), default 30 s. */
  outageCapMs?: number;
}

export interface JobRunner {
  register<P = unknown>(queue: string, handler: JobHandler<P>, opts?: QueueOptions): void;
  /** Persists a recurring job (spec: see schedule.ts) and lets this process enqueue its ticks. */
  schedule(name: string, spec: string, queue: string, payload?: unknown): Promise<void>;
  start(): void;
  /** Claims at once instead of at the next poll: call after enqueueing work this process should pick up. */
  wake(): void;
  /** Stops claiming, waits up to drainMs (default 10 s) for running jobs, then gives the rest back. */
  stop(opts?: { drainMs?: number }): Promise<{ finished: number; released: number }>;
  /** Jobs running in this process now. */
  readonly active: number;
}
