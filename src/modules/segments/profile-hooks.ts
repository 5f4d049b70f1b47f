import type { Queryable } from '../../platform/db';
import { eraseProfiles, markDirty } from './membership.repo';
import { enqueueRefresh } from './refresh.job';
import { lockWorkspaceSegments } from './segments.repo';

/** What the profiles module calls, in its own transactions, when it changes profiles outside the pipeline. */

/**
 * POST /identity/merge: the survivor and the merged-away profiles are decided again by the next
 * refresh (the merged-away ones are no longer live, so they exit every segment).
 */
export async function markProfilesForRefresh(
  tx: Queryable,
  workspaceId: string,
  profileIds: readonly string[],
): Promise<void> {
  const marked = await markDirty(
    tx,
    profileIds.map((profileId) => ({ workspaceId, profileId })),
  );
  for (const ws of marked) await enqueueRefresh(tx, ws);
}

/**
 * Erasure: the profiles' memberships, their change log rows and pending marks are deleted, with
 * no exit recorded or sent (that would keep a link between the erased id and its segments). Takes
 * the workspace's segment lock, so no refresh running meanwhile can write a row for them after.
 */
export async function eraseProfilesFromSegments(
  tx: Queryable,
  workspaceId: string,
  profileIds: readonly string[],
): Promise<{ memberships: number; changes: number }> {
  await lockWorkspaceSegments(tx, workspaceId);
  return eraseProfiles(tx, workspaceId, profileIds);
}
