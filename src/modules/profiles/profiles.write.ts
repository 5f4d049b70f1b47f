import type { Db, Queryable } from '../../platform/db';
import { DEFAULT_TRIES, retryConflicts } from '../../platform/db/retry';
import { AppError, notFound, validationError } from '../../platform/errors';
import { classifyIdentity, createGraphBatch, type Identifier, isSuppressed } from '../identity';
import { markProfilesForRefresh } from '../segments';
import { type BatchProfile, createProfileBatch, type Source, StaleReadError } from './profile-batch';
import * as reads from './profile-reads.repo';
import { type ProfileView, presentProfile, resolveProfileId } from './profiles.read';
import * as repo from './profiles.repo';
import { countTraitKeys, type Json, TOO_MANY_TRAIT_KEYS, TRAIT_LIMITS, type TraitUpdate } from './traits';
import { flushUnit } from './unit-of-work';

/** Writes of profiles through the API (POST /tenant/profiles), and the lock and retry rules of every writer. */

export interface UpsertProfileInput {
  id?: string | undefined;
  identity?: string | undefined;
  email?: string | undefined;
  first_name?: string | null | undefined;
  last_name?: string | null | undefined;
  attributes?: object | undefined;
}

const MAX_DEPTH = TRAIT_LIMITS.depth;

/** Attributes are stored as jsonb: no NUL anywhere, and a bounded depth (the merger recurses). */
export function checkAttributes(value: unknown, path = '/attributes', depth = 0): void {
  if (depth > MAX_DEPTH) throw validationError(path, `is nested deeper than ${MAX_DEPTH} levels`);
  if (typeof value === 'string') {
    if (value.includes('\u0000')) throw validationError(path, 'must not contain NUL characters');
    return;
  }
  if (typeof value !== 'object' || value === null) return;
  for (const [k, v] of Object.entries(value)) {
    const child = `${path}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`;
    if (k.includes('\u0000')) throw validationError(child, 'key must not contain NUL characters');
    checkAttributes(v, child, depth + 1);
  }
}

/**
 * Runs a transaction over profiles again when it lost a race: a deadlock or serialization failure
 * (the safety net: the lock order should prevent them) or a stale read found after locking (a
 * profile merged, erased or an identifier linked meanwhile). Bounded; see retryConflicts.
 */
export function withRetry<T>(fn: () => Promise<T>, tries = DEFAULT_TRIES): Promise<T> {
  return retryConflicts(fn, { tries, retryOn: (err) => err instanceof StaleReadError });
}

/**
 * Locks profiles by id, with the profiles merged into them (repo.lockProfiles: the one lock order),
 * and adds the live ones to a batch; throws StaleReadError when one was merged or erased meanwhile.
 */
export async function lockInto(
  tx: Queryable,
  batch: ReturnType<typeof createProfileBatch>,
  ids: readonly string[],
): Promise<void> {
  const { rows, complete } = await repo.lockProfiles(tx, ids);
  if (!complete || rows.length !== new Set(ids).size || rows.some((r) => r.merged_into !== null)) {
    throw new StaleReadError('a profile changed before it was locked');
  }
  batch.addLocked(rows);
}

/**
 * POST /tenant/profiles (contract §5): with `id`, update that profile (404 if absent); else the
 * profile owning `identity` (or `email`); else a new one. Traits follow the merge rules with the
 * request time as their time, and lineage names the API key.
 */
export async function upsertProfile(
  db: Db,
  workspaceId: string,
  apiKeyId: string,
  input: UpsertProfileInput,
): Promise<ProfileView> {
  if (input.attributes !== undefined) {
    // Counted first (it stops at the limit): the cost of a write, and its lineage, grow with its keys.
    if (countTraitKeys(input.attributes, TRAIT_LIMITS.keysPerWrite) > TRAIT_LIMITS.keysPerWrite)
      throw validationError('/attributes', TOO_MANY_TRAIT_KEYS);
    checkAttributes(input.attributes);
  }
  const identity = input.identity === undefined ? null : classifyIdentity(input.identity);
  if (input.identity !== undefined && !identity) {
    throw validationError(
      '/identity',
      'is not a usable identifier (empty or a placeholder such as "anonymous")',
    );
  }
  const email = input.email === undefined ? null : classifyIdentity(input.email);
  if (input.email !== undefined && email?.type !== 'email') {
    throw validationError('/email', 'is not an e-mail address');
  }
  const identifiers = [identity, email].filter((x): x is Identifier => x !== null);
  const source: Source = { type: 'api_key', id: apiKeyId };

  const id = await withRetry(() =>
    db.transaction(async (tx) => {
      const now = new Date();
      const batch = createProfileBatch();
      const graph = createGraphBatch();
      const keys = identifiers.map((i) => ({ workspace_id: workspaceId, type: i.type, value: i.value }));
      await graph.load(tx, keys);
      let targetId: string | null = null;
      if (input.id !== undefined) targetId = await resolveProfileId(tx, workspaceId, input.id);
      else {
        const ownerOf = (i: Identifier | null) => (i ? graph.ownerOf(workspaceId, i) : null);
        targetId = ownerOf(identity) ?? ownerOf(email) ?? null;
        if (!targetId && email)
          targetId = (await reads.findProfileIdsByEmail(tx, workspaceId, email.value))[0] ?? null;
      }
      await lockInto(tx, batch, [...new Set([...(targetId ? [targetId] : []), ...graph.owners(keys)])]);

      let profile: BatchProfile;
      if (targetId) profile = batch.survivor(targetId)!;
      else {
        if (await isSuppressed(tx, workspaceId, identifiers)) {
          throw new AppError(
            'CONFLICT',
            'an identifier of this profile was erased with suppression; it cannot create a profile',
          );
        }
        profile = batch.createProfile(workspaceId, now, source);
        graph.created(profile.id);
      }
      for (const i of identifiers) {
        const owner = graph.ownerOf(workspaceId, i);
        if (owner && owner !== profile.id) {
          throw new AppError(
            'CONFLICT',
            `${i.type === 'email' && i === email ? 'email' : 'identity'} belongs to another profile (${owner}); merge them with POST /identity/merge`,
          );
        }
        graph.attach(profile.id, workspaceId, i, now);
      }
      const update: TraitUpdate = {};
      if (email) update.email = email.value;
      if (input.first_name !== undefined) update.first_name = input.first_name;
      if (input.last_name !== undefined) update.last_name = input.last_name;
      if (input.attributes !== undefined) update.attributes = input.attributes as Record<string, Json>;
      const traits = batch.applyTraits(profile, update, now.getTime(), source, now);
      if (!traits.applied) throw validationError('/attributes', traits.reason);
      await flushUnit(tx, batch, graph);
      // Its segment memberships follow the new traits, decided by the next refresh.
      await markProfilesForRefresh(tx, workspaceId, [profile.id]);
      return profile.id;
    }),
  );
  // Follows a merge that committed since (the profile answered is then the survivor).
  const row = await reads.getProfile(db, workspaceId, id);
  if (!row) throw notFound('profile');
  return presentProfile(row);
}

/**
 * Stores total_spend and the completed-order summary as commerce computed them from the orders;
 * only the profiles whose values changed are written. Runs in the caller's transaction.
 */
export function storeOrderSummary(
  tx: Queryable,
  workspaceId: string,
  summaries: readonly repo.StoredOrderSummary[],
): Promise<void> {
  return repo.storeOrderSummary(tx, workspaceId, summaries);
}
