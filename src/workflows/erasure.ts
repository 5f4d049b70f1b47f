import type { Logger } from 'pino';
import { eraseAccountMemberships } from '../modules/accounts';
import { unlinkOrdersOfProfiles } from '../modules/commerce';
import { eraseIdentityOfProfiles, suppressIdentifiersOfProfile } from '../modules/identity';
import { eraseEventsOfProfiles } from '../modules/ingest';
import {
  deleteProfileRows,
  lockProfileFamily,
  recordErasure,
  resolveProfileId,
  withRetry,
} from '../modules/profiles';
import { eraseProfilesFromSegments } from '../modules/segments';
import type { Db } from '../platform/db';
import { newSortableId } from '../platform/ids';

export interface ErasureView {
  id: string;
  profile_id: string;
  erased_profile_ids: string[];
  suppressed: boolean;
  counts: {
    profiles: number;
    events: number;
    identity_nodes: number;
    lineage: number;
    orders_unlinked: number;
  };
}

/**
 * DELETE /tenant/profiles/{id}: erases the profile and the profiles merged into it,
 * their events, identifiers and lineage, and unlinks their orders. With `suppress`, a hash of each
 * identifier goes on the workspace's block list first. The log keeps ids and counts, never the data.
 *
 * Each owner erases its own rows, all in one transaction, after the profiles are locked (the one
 * lock order of every writer): commerce unlinks the orders, ingest deletes the events, identity the
 * nodes (edges go with them), segments the memberships and their change log, accounts the
 * profiles' account memberships (the accounts stay: they describe a company, not the person), then
 * profiles the lineage and the rows themselves.
 */
export async function eraseProfile(
  db: Db,
  log: Logger,
  workspaceId: string,
  id: string,
  opts: { suppress: boolean; apiKeyId: string | null },
): Promise<ErasureView> {
  const view = await withRetry(() =>
    db.transaction(async (tx) => {
      const survivor = await resolveProfileId(tx, workspaceId, id);
      // The survivor and every profile merged into it, locked in the one order, all in one go.
      const all = await lockProfileFamily(tx, survivor);
      if (opts.suppress) await suppressIdentifiersOfProfile(tx, workspaceId, survivor);
      const ordersUnlinked = await unlinkOrdersOfProfiles(tx, workspaceId, all);
      const events = await eraseEventsOfProfiles(tx, workspaceId, all);
      const nodes = await eraseIdentityOfProfiles(tx, workspaceId, all);
      await eraseProfilesFromSegments(tx, workspaceId, all);
      await eraseAccountMemberships(tx, workspaceId, all);
      const { lineage, profiles } = await deleteProfileRows(tx, workspaceId, all);
      const erasure: ErasureView = {
        id: newSortableId('era'),
        profile_id: survivor,
        erased_profile_ids: all,
        suppressed: opts.suppress,
        counts: { profiles, events, identity_nodes: nodes, lineage, orders_unlinked: ordersUnlinked },
      };
      await recordErasure(tx, {
        id: erasure.id,
        workspaceId,
        profileId: survivor,
        erasedIds: all,
        apiKeyId: opts.apiKeyId,
        suppressed: opts.suppress,
        counts: erasure.counts,
      });
      return erasure;
    }),
  );
  // Ids and counts only: the erased data itself is gone and must not reappear in logs.
  log.info(
    {
      workspace_id: workspaceId,
      erasure_id: view.id,
      profile_id: view.profile_id,
      suppressed: view.suppressed,
      counts: view.counts,
    },
    'profile erased',
  );
  return view;
}
