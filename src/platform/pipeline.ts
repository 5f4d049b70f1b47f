/**
 * The contract between the event pipeline (modules/processing/pipeline.ts) and its steps, which live
 * in the modules that own the data they touch. A step never throws to say what happened to an event:
 * it returns, per event it settles, one of these results; events it leaves unsettled go on to the
 * next step. Throwing is for failures (a bug, the database gone), which the processing loop retries.
 */

/** What became of one event. Events no step settles are applied. */
export type Settlement =
  /** Not applied and not kept: e.g. the identifiers of an erased, suppressed person. */
  | { kind: 'dropped'; reason: string }
  /** Set aside with the reason (GET /tenant/dead-letters); the stream moves on. */
  | { kind: 'dead_letter'; reason: string; keepProfile?: boolean }
  /** Left in the backlog for a later batch (an older event of the same person is held elsewhere). */
  | { kind: 'deferred' };

export type StepResult =
  /** Done; `settled` names the events this step took out of the batch, by seq. */
  | { kind: 'ok'; settled?: ReadonlyMap<number, Settlement> }
  /**
   * Another writer won a race (a profile merged, an identifier created meanwhile): the whole batch
   * rolls back and is claimed again with fresh reads.
   */
  | { kind: 'retry'; reason: string };

export const OK: StepResult = { kind: 'ok' };

export const settled = (entries: Iterable<[number, Settlement]>): StepResult => ({
  kind: 'ok',
  settled: new Map(entries),
});
