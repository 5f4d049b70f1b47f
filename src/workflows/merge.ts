import type { Logger } from 'pino';
import { moveAccountMemberships } from '../modules/accounts';
import { reassignOrders } from '../modules/commerce';
import { createGraphBatch, type GraphBatch, listIdentifiersOfProfiles, MERGE_CAP } from '../modules/identity';
import { moveEventsToSurvivors } from '../modules/ingest';
import { markRescoring } from '../modules/intelligence';
import { writeOutboxMany } from '../modules/outbox';
import {
  countMergedInto,
  createProfileBatch,
  lockInto,
  moveConsent,
  type ProfileBatch,
  type ProfileView,
  presentProfile,
  readLiveProfile,
  resolveProfileId,
  StaleReadError,
  withRetry,
} from '../modules/profiles';
import { markSegmentWork } from '../modules/segments';
import type { Db, Queryable } from '../platform/db';
import { AppError, validationError } from '../platform/errors';

/**
 * What a merge does, written once. Every entry point (the event pipeline's `write profiles` step,
 * POST /identity/merge, POST /tenant/profiles, and any to come) changes profiles and identity graph
 * in their two units of work (profiles' ProfileBatch, identity's GraphBatch), then calls
 * `commitUnits`, which writes them and every effect of the merges they hold on the data the other
 * modules own, in the caller's transaction:
 *
 *   profiles     the rows (traits merged by their field times, `merged_into` set and re-pointed one
 *                hop), the lineage of the merged fields, the merged-away profiles' lineage moved
 *   identity     the merged-away profiles' identifiers (nodes) now the survivor's, edges kept
 *   ingest       the merged-away profiles' events now the survivor's (timeline, segment counts)
 *   commerce     their orders now the survivor's; both profiles' order summaries (total_spend,
 *                completed orders) recomputed from the orders
 *   accounts     their account memberships now the survivor's (seen times widened)
 *   consent      their consent choices now the survivor's where newer, per category (profile_consent)
 *   intelligence both profiles on the rescoring list (the survivor's CLV and churn follow its orders)
 *   segments     both profiles on the dirty list (the merged-away one exits, the survivor is decided again)
 *   outbox       the unit's facts: profile.created and profile.merged, each with its profile as the
 *                transaction leaves it (traits and identifiers, bounded: profiles' FactProfile)
 *
 * This layer sits above the modules: it imports their public APIs, and no module imports it, so
 * none of them needs another in a circle (test/module-boundaries.test.ts refuses module cycles).
 */

/** A unit's merges by workspace, each pointing at its final survivor (ProfileBatch.moves()). */
export type Moves = ReadonlyMap<string, ReadonlyArray<{ from: string; to: string }>>;

/**
 * Writes the two units and the effects of their merges on every other owner. 'stale' when another
 * writer created one of the unit's new identifiers meanwhile: the caller rolls back and retries.
 */
export async function commitUnits(
  tx: Queryable,
  profiles: ProfileBatch,
  graph: GraphBatch,
): Promise<'ok' | 'stale'> {
  const liveId = (id: string) => profiles.survivor(id)?.id ?? id;
  await profiles.flush(tx);
  if ((await graph.flush(tx, liveId)) === 'stale') return 'stale';
  await applyMergeEffects(tx, profiles.moves());
  // The facts carry their profile with its identifiers as this transaction leaves them.
  const identities = await listIdentifiersOfProfiles(tx, profiles.subjects());
  await writeOutboxMany(
    tx,
    profiles.facts((id) => identities.get(id) ?? []),
  );
  return 'ok';
}

/**
 * The effects of merges outside the profiles and graph units: events, orders, account
 * memberships and consent choices follow the survivor, whose order summary is recomputed, and both sides are marked for rescoring and for
 * segment refresh. Each is a no-op (no statement) without merges.
 */
export async function applyMergeEffects(tx: Queryable, moves: Moves): Promise<void> {
  if (moves.size === 0) return;
  for (const [workspaceId, list] of moves) {
    await moveEventsToSurvivors(tx, workspaceId, list);
    await reassignOrders(tx, workspaceId, list);
    await moveAccountMemberships(tx, workspaceId, list);
    await moveConsent(tx, workspaceId, list);
  }
  await markRescoring(tx, [], moves);
  await markSegmentWork(tx, { items: [], moves });
}

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
      const secondaries = await resolveSecondaries(tx, workspaceId, primary, secondaryIds);
      // Every id already names the primary's survivor (A merged into B, then "merge A into B"):
      // nothing to do, and the same answer as the merge that did it.
      if (secondaries.length === 0)
        return { primary, merged: [], row: await readLiveProfile(tx, workspaceId, primary) };
      const batch = createProfileBatch();
      const graph = createGraphBatch();
      await lockInto(tx, batch, [primary, ...secondaries]);
      await graph.loadViews(tx, [primary, ...secondaries], countMergedInto);
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
      const p = batch.survivor(primary)!;
      const source = { type: 'api_key' as const, id: apiKeyId };
      const now = new Date();
      for (const s of secondaries) {
        batch.merge(p, batch.survivor(s)!, source, now);
        graph.merge(workspaceId, primary, s);
      }
      batch.mergedFact(workspaceId, primary, secondaries, source);
      if ((await commitUnits(tx, batch, graph)) === 'stale') throw staleLink();
      // Read inside the transaction: the answer is this merge's result, even if another merge takes
      // the primary away right after the commit.
      return { primary, merged: secondaries, row: await readLiveProfile(tx, workspaceId, primary) };
    }),
  );
  if (merged.length > 0) log.info({ workspace_id: workspaceId, primary, merged }, 'profiles merged by API');
  return { primary_profile_id: primary, merged_profile_ids: merged, profile: presentProfile(row) };
}

/** The live profiles the secondary ids name, without the primary and without repeats; 404 names the index. */
async function resolveSecondaries(
  tx: Queryable,
  workspaceId: string,
  primary: string,
  secondaryIds: readonly string[],
): Promise<string[]> {
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
  return secondaries;
}

/** Thrown inside a profile transaction when commitUnits found a new identifier taken meanwhile: withRetry. */
export const staleLink = (): Error =>
  new StaleReadError('an identifier was linked by another writer meanwhile');
