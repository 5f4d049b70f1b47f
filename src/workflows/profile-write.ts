import {
  classifyIdentity,
  createGraphBatch,
  type Identifier,
  isSuppressed,
  legacyIdentifier,
} from '../modules/identity';
import {
  type BatchProfile,
  checkAttributeWrite,
  createProfileBatch,
  findProfileIdsByEmail,
  getProfile,
  type Json,
  lockInto,
  type ProfileView,
  resolveProfileId,
  type Source,
  type TraitUpdate,
  withRetry,
} from '../modules/profiles';
import { markSegmentWork } from '../modules/segments';
import type { Db } from '../platform/db';
import { AppError, validationError } from '../platform/errors';
import { commitUnits, staleLink } from './merge';

/** POST /tenant/profiles: a profile written through the API, with its identifiers and segment work. */

export interface UpsertProfileInput {
  id?: string | undefined;
  identity?: string | undefined;
  email?: string | undefined;
  first_name?: string | null | undefined;
  last_name?: string | null | undefined;
  attributes?: object | undefined;
}

/**
 * With `id`, updates that profile (404 if absent); else the profile owning `identity` (or `email`);
 * else a new one. Traits follow the merge rules with the request time as their time, and lineage
 * names the API key. An identifier owned by another profile is a 409 (a merge is asked for
 * explicitly, with POST /identity/merge), so this write never merges; it commits through the same
 * unit of work as every merge all the same (commitUnits).
 */
export async function upsertProfile(
  db: Db,
  workspaceId: string,
  apiKeyId: string,
  input: UpsertProfileInput,
): Promise<ProfileView> {
  if (input.attributes !== undefined) checkAttributeWrite(input.attributes);
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
          targetId = (await findProfileIdsByEmail(tx, workspaceId, email.value))[0] ?? null;
      }
      await lockInto(tx, batch, [...new Set([...(targetId ? [targetId] : []), ...graph.owners(keys)])]);

      let profile: BatchProfile;
      if (targetId) profile = batch.survivor(targetId)!;
      else {
        const legacy = [
          legacyIdentifier(input.identity, 'identity'),
          legacyIdentifier(input.email, 'identity'),
        ];
        if (await isSuppressed(tx, workspaceId, identifiers, legacy)) {
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
      if ((await commitUnits(tx, batch, graph)) === 'stale') throw staleLink();
      // Its segment memberships follow the new traits, decided by the next refresh.
      await markSegmentWork(tx, { items: [{ workspaceId, profileId: profile.id }], moves: new Map() });
      return profile.id;
    }),
  );
  // Follows a merge that committed since (the profile answered is then the survivor).
  return getProfile(db, workspaceId, id);
}
