import type { Logger } from 'pino';
import type { Db } from '../../platform/db';
import type { Mutex } from '../../platform/mutex';
import { StaleReadError } from '../profiles';
import type { SettingsStore } from '../workspaces';
import { runPipeline } from './pipeline';
import * as repo from './processing.repo';

/**
 * One claimed batch, one transaction: the claim, every effect of the pipeline (pipeline.ts) and the
 * processed marks commit together, so each event is applied exactly once; every read and write is
 * one statement per batch, not per event.
 */

export interface ProcessorContext {
  log: Logger;
  settings: SettingsStore;
  /** See PipelineContext.orderGate. */
  orderGate?: Mutex;
  /** See PipelineContext.soleClaimer. */
  soleClaimer?: boolean;
}

export interface BatchOutcome {
  claimed: number;
  applied: number;
  /** Left for later: an older event of the same person is held by another worker. */
  deferred: number;
  deadLettered: number;
  /** Dropped: identifiers suppressed by an erasure. */
  dropped: number;
  /** Profiles merged away by the batch's events. */
  merged: number;
  seqs: number[];
  /** Time the claim statement took (ms): the processing benchmark watches it as the log grows. */
  claimMs: number;
  /** Milliseconds per pipeline step. */
  steps: Record<string, number>;
}

/** Claims up to `limit` events and applies them in one transaction. */
export async function processBatch(db: Db, ctx: ProcessorContext, limit: number): Promise<BatchOutcome> {
  const held: Array<() => void> = [];
  try {
    return await db.transaction(async (tx) => {
      const t0 = performance.now();
      const { events, gone } = await repo.claimEvents(tx, limit);
      const outcome: BatchOutcome = {
        claimed: events.length + gone.length,
        applied: 0,
        deferred: 0,
        deadLettered: 0,
        dropped: 0,
        merged: 0,
        seqs: [...events.map((e) => e.seq), ...gone],
        claimMs: performance.now() - t0,
        steps: {},
      };
      if (outcome.claimed === 0) return outcome;
      try {
        const r = await runPipeline(tx, { ...ctx, held }, events);
        // Rolls the transaction back; the loop retries the batch with fresh reads.
        if (r.kind === 'retry') throw new StaleReadError(r.reason);
        outcome.steps = r.work.timings;
        for (const moves of r.work.profiles.moves().values()) outcome.merged += moves.length;
        for (const s of r.work.settled.values()) {
          if (s.kind === 'deferred') outcome.deferred++;
          else if (s.kind === 'dropped') outcome.dropped++;
          else outcome.deadLettered++;
        }
        // A claimed seq whose event was deleted meanwhile (`gone`) left the backlog with the claim.
        outcome.applied = events.length - outcome.deferred - outcome.dropped - outcome.deadLettered;
      } catch (err) {
        // The loop needs to know which events failed, to retry them one by one.
        if (typeof err === 'object' && err !== null) (err as { seqs?: number[] }).seqs = outcome.seqs;
        throw err;
      }
      return outcome;
    });
  } finally {
    // After COMMIT (or ROLLBACK): the product rows are free again.
    for (const release of held) release();
  }
}

/**
 * Dead-letters one event in its own transaction (after it failed `attempts` times on its own), so
 * the stream moves on without it. False when it was meanwhile processed or is held elsewhere.
 */
export async function deadLetterEvent(
  db: Db,
  seq: number,
  reason: string,
  attempts: number,
): Promise<boolean> {
  return db.transaction(async (tx) => {
    const e = await repo.claimEvent(tx, seq);
    if (!e) return false;
    await repo.insertDeadLetters(tx, [repo.deadLetter(e.workspace_id, e.seq, reason, attempts)]);
    await repo.removeFromBacklog(tx, [e.seq]);
    return true;
  });
}
