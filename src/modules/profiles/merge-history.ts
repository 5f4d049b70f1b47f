import type { Queryable } from '../../platform/db';
import { moveEventsToSurvivors } from '../ingest';
import { moveLineage } from './lineage.repo';
import { repointMergedProfiles } from './profiles.repo';

/**
 * After merges: profiles merged into a merged-away one now point at its survivor (one hop, always),
 * and the merged-away profiles' events (ingest's rows) and lineage move to the survivor.
 */
export async function moveMergedHistory(
  q: Queryable,
  workspaceId: string,
  moves: ReadonlyArray<{ from: string; to: string }>,
): Promise<void> {
  if (moves.length === 0) return;
  await repointMergedProfiles(q, workspaceId, moves);
  await moveEventsToSurvivors(q, workspaceId, moves);
  await moveLineage(q, workspaceId, moves);
}
