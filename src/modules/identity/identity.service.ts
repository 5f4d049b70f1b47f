import type { Logger } from 'pino';
import type { Db } from '../../platform/db';
import { AppError, notFound, validationError } from '../../platform/errors';
import { iso } from '../../platform/http/envelope';
import { createProfileBatch } from '../profiles/profile-batch';
import * as profilesRepo from '../profiles/profiles.repo';
import {
  lockInto,
  type ProfileView,
  presentProfile,
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
  const merged = await withRetry(() =>
    db.transaction(async (tx) => {
      const primary = await resolveProfileId(tx, workspaceId, primaryId);
      const secondaries: string[] = [];
      for (const [i, id] of secondaryIds.entries()) {
        let survivor: string;
        try {
          survivor = await resolveProfileId(tx, workspaceId, id);
        } catch {
          throw new AppError('NOT_FOUND', `secondary profile ${i} not found`, {
            details: [{ path: `/secondary_profile_ids/${i}`, message: 'profile not found' }],
          });
        }
        if (survivor !== primary && !secondaries.includes(survivor)) secondaries.push(survivor);
      }
      if (secondaries.length === 0) return [];
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
      return secondaries;
    }),
  );
  const primary = await resolveProfileId(db, workspaceId, primaryId);
  const row = await profilesRepo.getProfile(db, workspaceId, primary);
  if (!row) throw notFound('profile');
  if (merged.length > 0) log.info({ workspace_id: workspaceId, primary, merged }, 'profiles merged by API');
  return { primary_profile_id: primary, merged_profile_ids: merged, profile: presentProfile(row) };
}

export interface GraphView {
  profile_id: string;
  nodes: Array<{ id: string; type: string; value: string; first_seen: string; last_seen: string }>;
  edges: Array<{ from: string; to: string; event_id: string | null; created_at: string }>;
  merged_profile_ids: string[];
}

export async function getGraph(db: Db, workspaceId: string, id: string): Promise<GraphView> {
  const profileId = await resolveProfileId(db, workspaceId, id);
  const [nodes, edges, merged] = await Promise.all([
    repo.listNodesOfProfile(db, workspaceId, profileId),
    repo.listEdgesOfProfile(db, workspaceId, profileId),
    profilesRepo.listMergedIds(db, workspaceId, profileId),
  ]);
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
