import { type CursorCodec, type Page, type PageRequest, toPage } from '../../platform/cursor';
import type { Db, Queryable } from '../../platform/db';
import { notFound } from '../../platform/errors';
import { iso } from '../../platform/http/envelope';
import { isUuid } from '../../platform/ids';
import {
  classifyAnonymousId,
  classifyIdentity,
  findNodes,
  type Identifier,
  junkSet,
  normalizeEmail,
} from '../identity';
import { type EventView, presentEvent } from '../ingest';
import * as lineageRepo from './lineage.repo';
import { StaleReadError } from './profile-batch.types';
import * as repo from './profile-reads.repo';
import * as timelineRepo from './timeline.repo';
import type { Json, JsonObject } from './traits';

/** Reads of profiles: one profile, lists, a profile's timeline and lineage. */

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
 * A live profile as it stands in the caller's transaction, for writers that answer with what they
 * wrote; gone (merged or erased since it was resolved): StaleReadError, so the writer retries.
 */
export async function readLiveProfile(
  q: Queryable,
  workspaceId: string,
  id: string,
): Promise<repo.ProfileReadRow> {
  const row = await repo.getProfile(q, workspaceId, id);
  if (!row || row.id !== id) throw new StaleReadError('the profile changed meanwhile');
  return row;
}

/**
 * A page of live profiles by id (a segment's members), in the order given, in one statement; an id
 * that is no longer live (merged or erased since it was listed) is left out.
 */
export async function getLiveProfiles(
  db: Db,
  workspaceId: string,
  ids: readonly string[],
): Promise<ProfileView[]> {
  const rows = new Map((await repo.getLiveProfiles(db, workspaceId, ids)).map((r) => [r.id, r]));
  return ids.flatMap((id) => {
    const row = rows.get(id);
    return row ? [presentProfile(row)] : [];
  });
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

/**
 * The live profile an id names (itself, or the survivor it was merged into), or null when there is
 * none in this workspace: for other modules' filters, where an unknown profile simply matches nothing.
 */
export async function findLiveProfileId(
  q: Queryable,
  workspaceId: string,
  id: string,
): Promise<string | null> {
  if (!isUuid(id)) return null;
  return repo.findSurvivorId(q, workspaceId, id.toLowerCase());
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
    ids = [...new Set((await findNodes(db, keys)).map((n) => n.profile_id))];
  }
  const email = filter.email === undefined ? undefined : normalizeEmail(filter.email);
  const afterSeq = page.after ? Number(page.after[0]) : null;
  const rows = await repo.listProfiles(db, workspaceId, { email, ids }, afterSeq, page.limit + 1);
  return toPage(codec, page, rows, (r) => [r.seq], presentProfile);
}

/** An event of a profile's timeline: the ingest module's one API shape of an event. */
export type TimelineEventView = EventView;

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
    timelineRepo.listProfileEvents(db, workspaceId, survivor, before, page.limit + 1),
  );
  return toPage(codec, page, rows, (r) => [iso(r.occurred_at), r.seq], presentEvent);
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
    lineageRepo.listLineage(db, workspaceId, survivor, beforeSeq, page.limit + 1),
  );
  return toPage(codec, page, rows, (r) => [r.seq], presentLineage);
}

/** A lineage row as the API shows it. */
export const presentLineage = (r: lineageRepo.LineageRow): LineageView => ({
  path: r.path,
  old: r.old_value,
  new: r.new_value,
  source_type: r.source_type,
  source_id: r.source_id,
  merged_from: r.merged_from,
  occurred_at: iso(r.occurred_at)!,
  recorded_at: iso(r.recorded_at)!,
});
