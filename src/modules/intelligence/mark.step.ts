import type { Queryable } from '../../platform/db';
import { OK, type StepResult } from '../../platform/pipeline';
import { enqueueScore } from './intelligence.jobs';
import { markDirty } from './rescoring.repo';

/** What the step needs of a batch's events. */
export interface ScoredEvent {
  eventType: string;
  workspaceId: string;
  profileId: string | null;
}

/**
 * Pipeline step `mark rescoring` (after `apply orders`): the profiles of the batch's order events (and
 * both sides of its merges) go
 * on the rescoring list and a keyed `intelligence.score` job is queued per workspace, in the claiming
 * transaction, so a committed order always has its rescoring coming, within seconds, with the
 * current fit. Every order event is marked, whatever its status: the job reads the profile's
 * completed orders, so over-marking costs one closed-form rescore and never changes an answer.
 */
export async function markRescoring(
  tx: Queryable,
  events: readonly ScoredEvent[],
  merges: ReadonlyMap<string, ReadonlyArray<{ from: string; to: string }>> = new Map(),
): Promise<StepResult> {
  const marks: Array<{ workspaceId: string; profileId: string }> = [];
  // A merge moves orders to the survivor (rescored with them) and away from the merged profile
  // (whose score row goes).
  for (const [workspaceId, moves] of merges) {
    for (const m of moves) marks.push({ workspaceId, profileId: m.from }, { workspaceId, profileId: m.to });
  }
  for (const e of events) {
    if (e.eventType === 'order' && e.profileId)
      marks.push({ workspaceId: e.workspaceId, profileId: e.profileId });
  }
  for (const ws of await markDirty(tx, marks)) await enqueueScore(tx, ws);
  return OK;
}
