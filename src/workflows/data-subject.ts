import { identifiersOfProfiles } from '../modules/identity';
import { listMergedIds, lockProfileFamily, resolveProfileId } from '../modules/profiles';
import type { Queryable } from '../platform/db';
import type { DataSubject } from '../platform/personal-data';

/**
 * The person an id names now (src/platform/personal-data.ts): the live profile, every profile merged
 * into it, and their identifiers. 404 for an unknown, erased or other workspace's id. With `lock`
 * (an erasure), the profiles are locked in the one lock order first, in the caller's transaction.
 */
export async function dataSubject(
  q: Queryable,
  workspaceId: string,
  id: string,
  opts: { lock: boolean },
): Promise<DataSubject> {
  const survivor = await resolveProfileId(q, workspaceId, id);
  const profileIds = opts.lock
    ? await lockProfileFamily(q, survivor)
    : [survivor, ...(await listMergedIds(q, workspaceId, survivor))];
  return { workspaceId, profileIds, identifiers: await identifiersOfProfiles(q, profileIds) };
}
