import type { Queryable } from '../../platform/db';
import { moveLineage } from './lineage.repo';
import { repointMergedProfiles } from './profiles.repo';

/**
 * After merges, the profiles module's part: profiles merged into a merged-away one now point at its
 * survivor (one hop, always), and the merged-away profiles' lineage moves to the survivor. What the
 * other modules own follows in the merge workflow (src/workflows/merge.ts).
 */
export async function moveMergedHistory(
  q: Queryable,
  workspaceId: string,
  moves: ReadonlyArray<{ from: string; to: string }>,
): Promise<void> {
  if (moves.length === 0) return;
  await repointMergedProfiles(q, workspaceId, moves);
  await moveLineage(q, workspaceId, moves);
}
