import type { Logger } from 'pino';
import type { Db, Queryable } from '../../platform/db';
import { AppError, validationError } from '../../platform/errors';
import {
  createGraphBatch,
  type GraphEdgeView,
  type GraphNodeView,
  MERGE_CAP,
  readGraphOfProfile,
} from '../identity';
import { markRescoring } from '../intelligence';
import { markProfilesForRefresh } from '../segments';
import { createProfileBatch, StaleReadError } from './profile-batch';
import * as reads from './profile-reads.repo';
import { type ProfileView, presentProfile, readFollowingMerges, resolveProfileId } from './profiles.read';
import * as repo from './profiles.repo';
import { lockInto, withRetry } from './profiles.write';
import { flushUnit } from './unit-of-work';

/**
 * Merges asked for through the API (POST /identity/merge) and the identity graph of a profile
 * (GET /identity/graph/{id}): they change or read profiles and graph together, so they live with
 * the profiles, which use the identity module's public API (identity never imports profiles).
 */

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
  /** The workspace's merge cap (settings.merge_cap). */
  mergeCap: number = MERGE_CAP,
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
      const graph = createGraphBatch();
      await lockInto(tx, batch, [primary, ...secondaries]);
      await graph.loadViews(tx, [primary, ...secondaries], repo.countMergedInto);
      const p = batch.survivor(primary)!;
      const total =
        graph.view(primary).mergedCount + secondaries.reduce((n, s) => n + 1 + graph.view(s).mergedCount, 0);
      if (total > mergeCap) {
        log.warn(
          { workspace_id: workspaceId, primary, secondaries: secondaries.length, total },
          'merge refused: merge cap reached',
        );
        throw new AppError(
          'CONFLICT',
          `merge refused: the profile would hold ${total} merged ids, more than the cap of ${mergeCap}`,
        );
      }
      const source = { type: 'api_key' as const, id: apiKeyId };
      const now = new Date();
      for (const s of secondaries) {
        batch.merge(p, batch.survivor(s)!, source, now);
        graph.merge(workspaceId, primary, s);
      }
      batch.mergedFact(workspaceId, primary, secondaries, source);
      await flushUnit(tx, batch, graph);
      // Segment membership follows: the merged-away profiles leave, the primary is decided again.
      await markProfilesForRefresh(tx, workspaceId, [primary, ...secondaries]);
      // The survivor now holds the merged orders: its scores are computed again.
      const moves = secondaries.map((from) => ({ from, to: primary }));
      await markRescoring(tx, [], new Map([[workspaceId, moves]]));
      // Read inside the transaction: the answer is this merge's result, even if another merge takes
      // the primary away right after the commit.
      return { primary, merged: secondaries, row: await readLive(tx, workspaceId, primary) };
    }),
  );
  if (merged.length > 0) log.info({ workspace_id: workspaceId, primary, merged }, 'profiles merged by API');
  return { primary_profile_id: primary, merged_profile_ids: merged, profile: presentProfile(row) };
}

/** The primary as it stands in this transaction; gone (merged or erased since it was resolved): retry. */
async function readLive(tx: Queryable, workspaceId: string, id: string): Promise<reads.ProfileReadRow> {
  const row = await reads.getProfile(tx, workspaceId, id);
  if (!row || row.id !== id) throw new StaleReadError('the primary profile changed meanwhile');
  return row;
}

export interface GraphView {
  profile_id: string;
  nodes: GraphNodeView[];
  edges: GraphEdgeView[];
  merged_profile_ids: string[];
}

export async function getGraph(db: Db, workspaceId: string, id: string): Promise<GraphView> {
  return readFollowingMerges(db, workspaceId, id, async (profileId) => {
    const [graph, merged] = await Promise.all([
      readGraphOfProfile(db, workspaceId, profileId),
      reads.listMergedIds(db, workspaceId, profileId),
    ]);
    return { profile_id: profileId, nodes: graph.nodes, edges: graph.edges, merged_profile_ids: merged };
  });
}
