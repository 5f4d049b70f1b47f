import type { Logger } from 'pino';
import { type CursorCodec, type Page, type PageRequest, toPage } from '../../platform/cursor';
import type { Db, Queryable } from '../../platform/db';
import { DEFAULT_TRIES, retryConflicts } from '../../platform/db/retry';
import { AppError, notFound, validationError } from '../../platform/errors';
import { iso } from '../../platform/http/envelope';
import { isUuid, newSortableId } from '../../platform/ids';
import {
  classifyAnonymousId,
  classifyIdentity,
  type Identifier,
  junkSet,
  normalizeEmail,
  suppressionHash,
} from '../identity/identifiers';
import * as graph from '../identity/identity.repo';
import { type BatchProfile, createProfileBatch, type Source, StaleReadError } from './profile-batch';
import * as repo from './profiles.repo';
import {
  countTraitKeys,
  type Json,
  type JsonObject,
  TOO_MANY_TRAIT_KEYS,
  TRAIT_LIMITS,
  type TraitUpdate,
} from './traits';

export interface ProfileView {
  id: string;
  email: string | null;
  first_name: string | null;
  last_name: string | null;
  total_spend: number;
  rfm_segment: string | null;
  churn_risk_score: number | null;
  predicted_clv: number | null;
  created_at: string;
  updated_at: string;
  attributes: JsonObject;
  identities: Array<{ type: string; value: string }>;
}

export const presentProfile = (r: repo.ProfileReadRow): ProfileView => ({
  id: r.id,
  email: r.email,
  first_name: r.first_name,
  last_name: r.last_name,
  total_spend: r.total_spend,
  rfm_segment: r.rfm_segment,
  churn_risk_score: r.churn_risk_score,
  predicted_clv: r.predicted_clv,
  created_at: iso(r.created_at)!,
  updated_at: iso(r.updated_at)!,
  attributes: r.attributes,
  identities: r.identities,
});

/**
 * The live profile an id names, or 404: unknown, another workspace's, not a UUID at all (never a
 * 500 from a cast), or erased. A merged-away id names its survivor.
 */
export async function resolveProfileId(q: Queryable, workspaceId: string, id: string): Promise<string> {
  if (!isUuid(id)) throw notFound('profile');
  const survivor = await repo.findSurvivorId(q, workspaceId, id.toLowerCase());
  if (!survivor) throw notFound('profile');
  return survivor;
}

/**
 * GET /tenant/profiles/{id}: the profile, or for a merged-away id its survivor (with the survivor's
 * id), read in one statement so that a merge committing meanwhile never turns it into a 404.
 */
export async function getProfile(db: Db, workspaceId: string, id: string): Promise<ProfileView> {
  if (!isUuid(id)) throw notFound('profile');
  const row = await repo.getProfile(db, workspaceId, id.toLowerCase());
  if (!row) throw notFound('profile');
  return presentProfile(row);
}

/**
 * Runs a read of the profile an id names (its survivor) that takes several statements: when the
 * survivor was itself merged away while the read ran (its history moved on), reads again from the
 * new survivor. A merged profile never comes back, so "live before and after" means live during.
 */
export async function readFollowingMerges<T>(
  db: Db,
  workspaceId: string,
  id: string,
  read: (survivor: string) => Promise<T>,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const survivor = await resolveProfileId(db, workspaceId, id);
    const result = await read(survivor);
    if (attempt >= 5 || (await repo.findSurvivorId(db, workspaceId, survivor)) === survivor) return result;
  }
}

export interface ProfileListFilter {
  email?: string | undefined;
  identity?: string | undefined;
}

export async function listProfiles(
  db: Db,
  codec: CursorCodec,
  workspaceId: string,
  page: PageRequest,
  filter: ProfileListFilter,
): Promise<Page<ProfileView>> {
  let ids: string[] | undefined;
  if (filter.identity !== undefined) {
    // Exact match on the normalized identifier, whatever type it turns out to be (an anonymous id
    // is tried too: a UUID is also a valid external id).
    const noJunk = junkSet([]);
    const candidates = [
      classifyIdentity(filter.identity, noJunk),
      classifyAnonymousId(filter.identity, noJunk),
    ];
    const keys = candidates
      .filter((c): c is Identifier => c !== null)
      .map((c) => ({ workspace_id: workspaceId, type: c.type, value: c.value }));
    ids = [...new Set((await graph.findNodes(db, keys)).map((n) => n.profile_id))];
  }
  const email = filter.email === undefined ? undefined : normalizeEmail(filter.email);
  const afterSeq = page.after ? Number(page.after[0]) : null;
  const rows = await repo.listProfiles(db, workspaceId, { email, ids }, afterSeq, page.limit + 1);
  return toPage(codec, page, rows, (r) => [r.seq], presentProfile);
}

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
      const nodes = await graph.findNodes(
        tx,
        identifiers.map((i) => ({ workspace_id: workspaceId, type: i.type, value: i.value })),
      );
      let targetId: string | null = null;
      if (input.id !== undefined) targetId = await resolveProfileId(tx, workspaceId, input.id);
      else {
        const byKey = (i: Identifier | null) =>
          nodes.find((n) => i && n.type === i.type && n.value === i.value);
        targetId = byKey(identity)?.profile_id ?? byKey(email)?.profile_id ?? null;
        if (!targetId && email)
          targetId = (await repo.findProfileIdsByEmail(tx, workspaceId, email.value))[0] ?? null;
      }
      const owners = [...new Set(nodes.map((n) => n.profile_id))];
      await lockInto(tx, batch, [...new Set([...(targetId ? [targetId] : []), ...owners])]);
      batch.addNodes(nodes);

      let profile: BatchProfile;
      if (targetId) profile = batch.survivor(targetId)!;
      else {
        const hashes = identifiers.map((i) => ({
          workspace_id: workspaceId,
          hash: suppressionHash(workspaceId, i),
        }));
        if ((await graph.findSuppressed(tx, hashes)).length > 0) {
          throw new AppError(
            'CONFLICT',
            'an identifier of this profile was erased with suppression; it cannot create a profile',
          );
        }
        profile = batch.createProfile(workspaceId, now, source);
      }
      for (const i of identifiers) {
        const owner = batch.ownerOf(workspaceId, i);
        if (owner && owner.id !== profile.id) {
          throw new AppError(
            'CONFLICT',
            `${i.type === 'email' && i === email ? 'email' : 'identity'} belongs to another profile (${owner.id}); merge them with POST /identity/merge`,
          );
        }
        batch.attach(profile, i, now);
      }
      const update: TraitUpdate = {};
      if (email) update.email = email.value;
      if (input.first_name !== undefined) update.first_name = input.first_name;
      if (input.last_name !== undefined) update.last_name = input.last_name;
      if (input.attributes !== undefined) update.attributes = input.attributes as Record<string, Json>;
      const traits = batch.applyTraits(profile, update, now.getTime(), source, now);
      if (!traits.applied) throw validationError('/attributes', traits.reason);
      await batch.flush(tx);
      return profile.id;
    }),
  );
  // Follows a merge that committed since (the profile answered is then the survivor).
  const row = await repo.getProfile(db, workspaceId, id);
  if (!row) throw notFound('profile');
  return presentProfile(row);
}

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
 * DELETE /tenant/profiles/{id}: erases the profile and the profiles merged into it, their events,
 * identifiers and lineage, and unlinks their orders. With `suppress`, a hash of each identifier
 * goes on the workspace's block list first. The log keeps ids and counts, never the data.
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
      if (opts.suppress) {
        const nodes = await graph.listNodesOfProfile(tx, workspaceId, survivor);
        await graph.insertSuppressions(
          tx,
          workspaceId,
          nodes.map((n) => suppressionHash(workspaceId, n)),
        );
      }
      const counts = await repo.eraseProfiles(tx, workspaceId, all);
      const erasure: ErasureView = {
        id: newSortableId('era'),
        profile_id: survivor,
        erased_profile_ids: all,
        suppressed: opts.suppress,
        counts: {
          profiles: counts.profiles,
          events: counts.events,
          identity_nodes: counts.identity_nodes,
          lineage: counts.lineage,
          orders_unlinked: counts.orders,
        },
      };
      await repo.insertErasure(tx, {
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

export interface TimelineEventView {
  id: string;
  event_type: string;
  event_name: string;
  anonymous_id: string | null;
  identity: string | null;
  payload: Record<string, unknown>;
  timestamp: string;
  received_at: string;
}

export async function listProfileEvents(
  db: Db,
  codec: CursorCodec,
  workspaceId: string,
  id: string,
  page: PageRequest,
): Promise<Page<TimelineEventView>> {
  const before =
    page.after && typeof page.after[0] === 'string' && typeof page.after[1] === 'number'
      ? { occurredAt: page.after[0], seq: page.after[1] }
      : null;
  const rows = await readFollowingMerges(db, workspaceId, id, (survivor) =>
    repo.listProfileEvents(db, workspaceId, survivor, before, page.limit + 1),
  );
  return toPage(
    codec,
    page,
    rows,
    (r) => [iso(r.occurred_at), r.seq],
    (r) => ({
      id: r.id,
      event_type: r.event_type,
      event_name: r.event_name,
      anonymous_id: r.anonymous_id,
      identity: r.identity,
      payload: r.payload,
      timestamp: iso(r.occurred_at)!,
      received_at: iso(r.received_at)!,
    }),
  );
}

export interface LineageView {
  path: string;
  old: Json;
  new: Json;
  source_type: 'event' | 'api_key';
  source_id: string | null;
  merged_from: string | null;
  occurred_at: string;
  recorded_at: string;
}

export async function listLineage(
  db: Db,
  codec: CursorCodec,
  workspaceId: string,
  id: string,
  page: PageRequest,
): Promise<Page<LineageView>> {
  const beforeSeq = page.after && typeof page.after[0] === 'number' ? page.after[0] : null;
  const rows = await readFollowingMerges(db, workspaceId, id, (survivor) =>
    repo.listLineage(db, workspaceId, survivor, beforeSeq, page.limit + 1),
  );
  return toPage(
    codec,
    page,
    rows,
    (r) => [r.seq],
    (r) => ({
      path: r.path,
      old: r.old_value,
      new: r.new_value,
      source_type: r.source_type,
      source_id: r.source_id,
      merged_from: r.merged_from,
      occurred_at: iso(r.occurred_at)!,
      recorded_at: iso(r.recorded_at)!,
    }),
  );
}
