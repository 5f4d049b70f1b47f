import type { Logger } from 'pino';
import { type Db, isStorageUnavailable } from '../../platform/db';
import { describeError } from '../../platform/logger';
import { createMutex } from '../../platform/mutex';
import { createSliceSizer } from '../../platform/slices';
import type { WorkerModule } from '../../platform/worker-module';
import { createSettingsStore } from '../workspaces';
import { EVENTS_CHANNEL } from './dead-letters.service';
import {
  BATCH_SIZE,
  CONCURRENCY,
  isContention,
  type LoopOptions,
  MAX_ATTEMPTS,
  MAX_OUTAGE_BACKOFF_MS,
  MIN_SHARED_BATCH,
  SHARED_BATCH_TARGET_MS,
  SHARING_WINDOW_MS,
  VACUUM_EVERY,
} from './processing.policy';
import { vacuumBacklog } from './processing.repo';
import {
  type BatchOutcome,
  deadLetterEvent,
  type ProcessorContext,
  processBatch,
} from './processing.service';

/**
 * The processing loop (ROLE=worker|all): claim a batch, apply it, repeat while there is a backlog;
 * when idle, sleep with a growing delay until the events trigger's notification (or the delay) wakes
 * it. Failures:
 * - storage unavailable (connection refused or lost, a statement timed out, the server shutting
 *   down; see platform/db/errors.ts): nothing is wrong with the events, so the loop pauses and
 *   retries forever with a backoff capped at MAX_OUTAGE_BACKOFF_MS. These never count towards
 *   dead-lettering, however long the outage;
 * - contention (deadlock, serialization, a race with another writer): the batch is rolled back and
 *   retried with exponential backoff, up to 10 times in a row;
 * - anything else (or contention that persists): the batch is retried one event per transaction to
 *   find the culprit; an event that fails alone MAX_ATTEMPTS times goes to the dead-letter table
 *   with its reason, and the stream moves on.
 */
/** Logged and kept as dead-letter reasons: without the values a database error may quote. */
const describe = (err: unknown): string => describeError(err).slice(0, 1000);

export interface ProcessingLoop {
  /** Wakes the loop now (tests, and the events notification). */
  kick(): void;
  stop(): Promise<void>;
}

export async function startProcessingLoop(db: Db, log: Logger, opts: LoopOptions): Promise<ProcessingLoop> {
  const settings = opts.settings ?? createSettingsStore(db);
  const loops = Math.max(1, opts.concurrency ?? 1);
  // PGlite is one process (its data directory is locked) on one connection: with one loop, no other
  // claim can hold an older event, so the order guard has nothing to wait for.
  const soleClaimer = db.engine === 'pglite' && loops === 1;
  const ctx: ProcessorContext = { log, settings, orderGate: createMutex(), soleClaimer };
  const minIdle = opts.minIdleMs ?? 10;
  const maxIdle = opts.maxIdleMs ?? 200;
  const maxAttempts = opts.maxAttempts ?? MAX_ATTEMPTS;
  const maxOutageBackoff = opts.maxOutageBackoffMs ?? MAX_OUTAGE_BACKOFF_MS;
  let stopped = false;
  /** Bumped by every notification: a loop that saw it change since its last claim does not sleep. */
  let generation = 0;
  /** Sleeping loops; `onEvents` ones also wake when events arrive (backoffs only wake on stop). */
  const wakers = new Map<() => void, boolean>();

  const kick = () => {
    generation++;
    for (const [w, onEvents] of wakers) if (onEvents) w();
  };
  /** `seen`: the generation the caller last claimed at, or null for a backoff events must not cut short. */
  const sleep = (ms: number, seen: number | null) =>
    new Promise<void>((resolve) => {
      if (stopped || (seen !== null && generation !== seen)) return resolve();
      const done = () => {
        clearTimeout(timer);
        wakers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      wakers.set(done, seen !== null);
    });

  const unlisten = await db.listen(EVENTS_CHANNEL, kick);

  let sinceVacuum = 0;
  let vacuuming = false;
  // The statistics of the tables the pipeline reads are kept by the statistics worker
  // (platform/db/statistics.ts), like every other table's.
  const maintain = async (processed: number) => {
    sinceVacuum += processed;
    if (sinceVacuum < (opts.vacuumEvery ?? VACUUM_EVERY) || vacuuming) return;
    vacuuming = true;
    sinceVacuum = 0;
    try {
      const t0 = performance.now();
      await vacuumBacklog(db);
      log.debug({ ms: Math.round(performance.now() - t0) }, 'event backlog vacuumed');
    } catch (err) {
      // Only an optimisation: the next interval tries again.
      log.warn({ err: describe(err) }, 'event backlog vacuum failed');
    } finally {
      vacuuming = false;
    }
  };

  // While requests are being served on the one connection of PGlite, a batch is sized to about
  // opts.shareWithRequests ms, so a request waits for at most that; alone, batches are full size.
  const sharedSizer = createSliceSizer({
    targetMs: opts.shareWithRequests ?? 0,
    min: Math.min(MIN_SHARED_BATCH, opts.batchSize),
    max: opts.batchSize,
    initial: Math.min(50, opts.batchSize),
  });
  const run = async () => {
    let idle = minIdle;
    let isolateThrough: number | null = null;
    let transientStreak = 0;
    let outageStreak = 0;
    const attempts = new Map<number, number>();
    while (!stopped) {
      const seen = generation;
      // Short batches while requests are served or a calculation walks its slices: either waits
      // for at most one of them (lanes take turns, platform/priority-mutex.ts).
      const sharingSince = Math.max(db.foregroundSeenAt(), db.interactiveSeenAt());
      const shared =
        opts.shareWithRequests !== undefined && performance.now() - sharingSince < SHARING_WINDOW_MS;
      const limit = isolateThrough !== null ? 1 : shared ? sharedSizer.size('') : opts.batchSize;
      let out: BatchOutcome | null = null;
      let claimedSeqs: number[] = [];
      const t0 = performance.now();
      try {
        out = await processBatch(db, ctx, limit);
        if (shared && out.claimed >= limit) sharedSizer.record('', limit, performance.now() - t0);
      } catch (err) {
        claimedSeqs = (err as { seqs?: number[] }).seqs ?? [];
        if (stopped) break;
        if (isStorageUnavailable(err)) {
          outageStreak++;
          if (outageStreak === 1 || outageStreak % 30 === 0) {
            log.warn(
              { err: describe(err), attempts: outageStreak },
              'database unavailable; processing paused',
            );
          }
          await sleep(Math.min(maxOutageBackoff, 50 * 2 ** Math.min(outageStreak, 10)), null);
          continue;
        }
        if (isContention(err) && transientStreak < 10) {
          transientStreak++;
          log.warn({ err: describe(err), retry: transientStreak }, 'event batch failed; retrying');
          await sleep(Math.min(5000, 50 * 2 ** transientStreak), null);
          continue;
        }
        transientStreak = 0;
        if (claimedSeqs.length === 0) {
          log.error({ err: describe(err) }, 'event batch failed before claiming');
          await sleep(1000, null);
          continue;
        }
        if (limit > 1) {
          isolateThrough = Math.max(...claimedSeqs);
          log.warn(
            { err: describe(err), events: claimedSeqs.length },
            'event batch failed; applying one by one',
          );
          continue;
        }
        const seq = claimedSeqs[0]!;
        const n = (attempts.get(seq) ?? 0) + 1;
        attempts.set(seq, n);
        if (n >= maxAttempts) {
          attempts.delete(seq);
          const moved = await deadLetterEvent(db, seq, describe(err), n).catch(() => false);
          log.error(
            { err: describe(err), seq, attempts: n, dead_lettered: moved },
            'event moved to dead letters',
          );
        } else {
          await sleep(Math.min(5000, 100 * 2 ** n), null);
        }
        continue;
      }
      transientStreak = 0;
      if (outageStreak > 0) {
        log.info({ attempts: outageStreak }, 'database available again; processing resumed');
        outageStreak = 0;
      }
      if (out.merged > 0) {
        // One line per batch, not per merge: a busy shop merges guests into customers all day.
        log.info({ merged: out.merged, events: out.applied }, 'profiles merged');
      }
      if (out.claimed > 0) {
        log.debug(
          {
            claimed: out.claimed,
            applied: out.applied,
            deferred: out.deferred,
            dead_lettered: out.deadLettered,
            claim_ms: Math.round(out.claimMs * 100) / 100,
            step_ms: Object.fromEntries(
              Object.entries(out.steps).map(([k, v]) => [k, Math.round(v * 100) / 100]),
            ),
          },
          'event batch',
        );
        await maintain(out.claimed - out.deferred);
      }
      for (const s of out.seqs) attempts.delete(s);
      if (isolateThrough !== null && (out.claimed === 0 || out.seqs.some((s) => s >= isolateThrough!))) {
        isolateThrough = null;
      }
      if (out.claimed > 0 && out.deferred === out.claimed) {
        // Everything claimed waits for another worker's older events: give it a moment.
        await sleep(20, seen);
        continue;
      }
      if (out.claimed >= limit) {
        idle = minIdle;
        continue;
      }
      await sleep(out.claimed > 0 ? minIdle : idle, seen);
      idle = out.claimed > 0 ? minIdle : Math.min(maxIdle, idle * 2);
    }
  };

  const running = Array.from({ length: loops }, () =>
    run().catch((err: unknown) => log.error({ err: describe(err) }, 'processing loop crashed')),
  );
  return {
    kick,
    async stop() {
      stopped = true;
      for (const w of [...wakers.keys()]) w();
      await Promise.all(running);
      await unlisten();
    },
  };
}

export const processingWorker: WorkerModule = {
  name: 'processing',
  async start(deps) {
    const batchSize = deps.config.workerBatchSize ?? BATCH_SIZE[deps.db.engine];
    const loops = deps.config.workerLoops ?? CONCURRENCY[deps.db.engine];
    // The worker lane: requests go first on PGlite's single connection (platform/db/port.ts).
    const loop = await startProcessingLoop(deps.db.lane('worker'), deps.log, {
      batchSize,
      concurrency: loops,
      settings: deps.settings,
      // PGlite's one connection serves requests too: batches share it unless their size was set.
      ...(deps.db.engine === 'pglite' && deps.config.workerBatchSize === null
        ? { shareWithRequests: SHARED_BATCH_TARGET_MS }
        : {}),
    });
    deps.log.info({ loops, batch_size: batchSize }, 'processing started');
    return () => loop.stop();
  },
};
