import type { Queryable } from '../../platform/db';
import * as repo from './erase.repo';

/**
 * What other modules may do to the event log's rows of a profile in a merge (an erasure goes through
 * ./personal-data.ts). Runs in the caller's transaction, after the caller locked the profiles (the
 * one lock order).
 */

/** Merges: the merged-away profiles' events move to their survivors (timelines follow the merge). */
export function moveEventsToSurvivors(
  q: Queryable,
  workspaceId: string,
  moves: ReadonlyArray<{ from: string; to: string }>,
): Promise<void> {
  return repo.moveEventsOfProfiles(q, workspaceId, moves);
}
