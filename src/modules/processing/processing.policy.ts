import { isContention as isDbContention } from '../../platform/db';
import { StaleReadError } from '../profiles';
import type { SettingsStore } from '../workspaces';

/** The processing loop's knobs and their defaults per engine, each with the measurement behind it. */

export interface LoopOptions {
  batchSize: number;
  /**
   * Loops claiming side by side in this process. On PostgreSQL a second one keeps the server busy
   * while the first is in JavaScript; they coordinate exactly like separate worker processes.
   */
  concurrency?: number;
  /** Idle polling delay bounds (ms); notifications usually wake the loop long before. */
  minIdleMs?: number;
  maxIdleMs?: number;
  maxAttempts?: number;
  /** Cap of the pause between attempts while the database is unavailable (MAX_OUTAGE_BACKOFF_MS). */
  maxOutageBackoffMs?: number;
  /** Events between two VACUUMs of the backlog (VACUUM_EVERY). */
  vacuumEvery?: number;
  /**
   * PGlite: while requests have been served in the last SHARING_WINDOW_MS, a batch is sized to take
   * about this many milliseconds (its transaction holds the one connection every request needs);
   * unset, batches are always `batchSize`.
   */
  shareWithRequests?: number;
  /**
   * The service's settings accessor. Without one (tests), a private store that is never started,
   * so never trusts its cache: every batch reads the settings afresh.
   */
  settings?: SettingsStore;
}

export const MAX_ATTEMPTS = 3;

/** Batch sizes per engine: PGlite serializes every query, so its batches stay short for the API's sake. */
export const BATCH_SIZE = { postgres: 1000, pglite: 250 } as const;
/**
 * Claiming loops per process. On PostgreSQL a second loop keeps the server busy while the first is
 * in JavaScript (+15–25% measured); their order events take turns (ProcessorContext.orderGate).
 * PGlite runs one statement at a time, so a second loop there would only queue.
 */
export const CONCURRENCY = { postgres: 2, pglite: 1 } as const;

/**
 * Events processed (by this process) between two VACUUMs of the backlog. Each processed event leaves
 * a dead backlog row and index entry that every claim walks past until a vacuum removes them
 * (migrations/0006_event_backlog.sql); at this interval a claim walks at most this many, and the
 * vacuum itself (a table of bare seqs) takes milliseconds. Measured in `npm run bench -- processing`.
 */
export const VACUUM_EVERY = 5_000;

/**
 * PGlite's processing while requests are being served: a batch holds the single connection for its
 * whole transaction (a 250-event batch took 100–300 ms), and a request that arrives meanwhile waits
 * for all of it. While the API has served anything in the last second, batches are sized to about
 * 15 ms (down to 5 events), so a request waits for at most that; with no requests, full batches,
 * which process fastest. Measured in docs/benchmarks.md ("Noisy neighbour").
 */
export const SHARED_BATCH_TARGET_MS = 15;
export const SHARING_WINDOW_MS = 1_000;
export const MIN_SHARED_BATCH = 5;

/** Longest pause between two attempts while the database is unavailable: recovery within this. */
export const MAX_OUTAGE_BACKOFF_MS = 2000;

/** A failure caused by concurrent writers (or a stale read), which the same batch may not meet again. */
export function isContention(err: unknown): boolean {
  return err instanceof StaleReadError || isDbContention(err);
}
