import type { Logger } from 'pino';
import type { Db, Queryable } from '../../platform/db';
import { AppError, validationError } from '../../platform/errors';
import { iso } from '../../platform/http/envelope';
import { createProfileBatch, StaleReadError } from '../profiles/profile-batch';
import * as profilesRepo from '../profiles/profiles.repo';
import {
  lockInto,
  type ProfileView,
  presentProfile,
  readFollowingMerges,
  resolveProfileId,
  withRetry,
} from '../profiles/profiles.service';
import * as repo from './identity.repo';
import { MERGE_CAP } from './resolve';

export interface MergeResult {
  primary_profile_id: string;
  merged_profile_ids: string[];
  profile: ProfileView;
}

/**
 * POST /identity/merge: merges the secondaries into the primary in one transaction, locking every
 * profile in id order like every other writer. Unlike automatic resolution this ignores the
 * unique-identifier rule (a person asked for it), but not the merge cap.
 */
export async function mergeProfiles(
  db: Db,
  log: Logger,
  workspaceId: string,
  apiKeyId: string,
  primaryId: string,
  secondaryIds: readonly string[],
): Promise<MergeResult> {
  const self = secondaryIds.findIndex((id) => id.toLowerCase() === primaryId.toLowerCase());
  if (self >= 0) throw validationError(`/secondary_profile_ids/${self}`, 'must not be the primary profile');
  const { primary, merged, row } = await withRetry(() =>
    db.transaction(async (tx) => {
      const primary = await resolveProfileId(tx, workspaceId, primaryId);
      const secondaries: string[] = [];
      for (const [i, id] of secondaryIds.entries()) {
        let survivor: string;
        try {
          survivor = await resolveProfileId(tx, workspaceId, id);
        } catch (err) {
          if (!(err instanceof AppError)) throw err;
          throw new AppError('NOT_FOUND', `secondary profile ${i} not found`, {
            details: [{ path: `/secondary_profile_ids/${i}`, message: 'profile not found' }],
          });
        }
        if (survivor !== primary && !secondaries.includes(survivor)) secondaries.push(survivor);
      }
      // Every id already names the primary's survivor (A merged into B, then "merge A into B"):
      // nothing to do, and the same answer as the merge that did it.
      if (secondaries.length === 0)
        return { primary, merged: [], row: await readLive(tx, workspaceId, primary) };
      const batch = createProfileBatch();
      await lockInto(tx, batch, [primary, ...secondaries]);
      await batch.loadViews(tx, [...batch.profiles.values()]);
      const p = batch.survivor(primary)!;
      const total = p.mergedCount + secondaries.reduce((n, s) => n + 1 + batch.survivor(s)!.mergedCount, 0);
      if (total > MERGE_CAP) {
        log.warn(
          { workspace_id: workspaceId, primary, secondaries: secondaries.length, total },
          'merge refused: merge cap reached',
        );
        throw new AppError(
          'CONFLICT',
          `merge refused: the profile would hold ${total} merged ids, more than the cap of ${MERGE_CAP}`,
        );
      }
      const source = { type: 'api_key' as const, id: apiKeyId };
      const now = new Date();
      for (const s of secondaries) batch.merge(p, batch.survivor(s)!, source, now);
      batch.mergedFact(workspaceId, primary, secondaries, source);
      await batch.flush(tx);
      // Read inside the transaction: the answer is this merge's result, even if another merge takes
      // the primary away right after the commit.
      return { primary, merged: secondaries, row: await readLive(tx, workspaceId, primary) };
    }),
  );
  if (merged.length > 0) log.info({ workspace_id: workspaceId, primary, merged }, 'profiles merged by API');
  return { primary_profile_id: primary, merged_profile_ids: merged, profile: presentProfile(row) };
}

/** The primary as it stands in this transaction; gone (merged or erased since it was resolved): retry. */
async function readLive(
  tx: Queryable,
  workspaceId: string,
  id: string,
): Promise<profilesRepo.ProfileReadRow> {
  const row = await profilesRepo.getProfile(tx, workspaceId, id);
  if (!row || row.id !== id) throw new StaleReadError('the primary profile changed meanwhile');
  return row;
}

export interface GraphView {
  profile_id: string;
  nodes: Array<{ id: string; type: string; value: string; first_seen: string; last_seen: string }>;
  edges: Array<{ from: string; to: string; event_id: string | null; created_at: string }>;
  merged_profile_ids: string[];
}

export async function getGraph(db: Db, workspaceId: string, id: string): Promise<GraphView> {
  const { profileId, nodes, edges, merged } = await readFollowingMerges(
    db,
    workspaceId,
    id,
    async (profileId) => {
      const [nodes, edges, merged] = await Promise.all([
        repo.listNodesOfProfile(db, workspaceId, profileId),
        repo.listEdgesOfProfile(db, workspaceId, profileId),
        profilesRepo.listMergedIds(db, workspaceId, profileId),
      ]);
      return { profileId, nodes, edges, merged };
    },
  );
  return {
    profile_id: profileId,
    nodes: nodes.map((n) => ({
      id: n.id,
      type: n.type,
      value: n.value,
      first_seen: iso(n.first_seen)!,
      last_seen: iso(n.last_seen)!,
    })),
    edges: edges.map((e) => ({
      from: e.from_node,
      to: e.to_node,
      event_id: e.event_id,
      created_at: iso(e.created_at)!,
    })),
    merged_profile_ids: merged,
  };
}
