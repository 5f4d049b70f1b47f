import type { Logger } from 'pino';
import type { Db } from '../../platform/db';
import { newSortableId } from '../../platform/ids';
import { unlinkOrdersOfProfiles } from '../commerce';
import { eraseIdentityOfProfiles, suppressIdentifiersOfProfile } from '../identity';
import { eraseEventsOfProfiles } from '../ingest';
import { eraseProfilesFromSegments } from '../segments';
import * as erasureRepo from './erasure.repo';
import { deleteLineage } from './lineage.repo';
import { StaleReadError } from './profile-batch';
import { resolveProfileId } from './profiles.read';
import * as repo from './profiles.repo';
import { withRetry } from './profiles.write';

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
 * DELETE /tenant/profiles/{id} (contract §5): erases the profile and the profiles merged into it,
 * their events, identifiers and lineage, and unlinks their orders. With `suppress`, a hash of each
 * identifier goes on the workspace's block list first. The log keeps ids and counts, never the data.
 *
 * Each owner erases its own rows, all in one transaction, after the profiles are locked (the one
 * lock order of every writer): commerce unlinks the orders, ingest deletes the events, profiles the
 * lineage, identity the nodes (edges go with them), segments the memberships and their change log,
 * then profiles the rows themselves.
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
      const locked = await repo.lockProfiles(tx, [survivor]);
      if (!locked.complete || locked.rows[0]?.merged_into !== null) {
        throw new StaleReadError('the profile changed before it was locked');
      }
      const all = [survivor, ...locked.merged.map((r) => r.id)];
      if (opts.suppress) await suppressIdentifiersOfProfile(tx, workspaceId, survivor);
      const ordersUnlinked = await unlinkOrdersOfProfiles(tx, workspaceId, all);
      const events = await eraseEventsOfProfiles(tx, workspaceId, all);
      const lineage = await deleteLineage(tx, workspaceId, all);
      const nodes = await eraseIdentityOfProfiles(tx, workspaceId, all);
      await eraseProfilesFromSegments(tx, workspaceId, all);
      const profiles = await repo.deleteProfiles(tx, workspaceId, all);
      const erasure: ErasureView = {
        id: newSortableId('era'),
        profile_id: survivor,
        erased_profile_ids: all,
        suppressed: opts.suppress,
        counts: { profiles, events, identity_nodes: nodes, lineage, orders_unlinked: ordersUnlinked },
      };
      await erasureRepo.insertErasure(tx, {
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
