import { createYielder, stringifyArray } from '../../platform/cooperate';
import type { Queryable } from '../../platform/db';
import { movesFrom, movesParams, probeEach } from '../../platform/db/moves';
import type { FieldTimes, JsonObject } from './traits';

export interface ProfileRow {
  id: string;
  seq: number;
  workspace_id: string;
  email: string | null;
  first_name: string | null;
  last_name: string | null;
  attributes: JsonObject;
  field_times: FieldTimes;
  total_spend: number;
  rfm_segment: string | null;
  churn_risk_score: number | null;
  predicted_clv: number | null;
  merged_into: string | null;
  created_at: Date;
  updated_at: Date;
}

export const COLUMNS = `p.id, p.seq, p.workspace_id, p.email, p.first_name, p.last_name, p.attributes, p.field_times,
  p.total_spend, p.rfm_segment, p.churn_risk_score, p.predicted_clv, p.merged_into, p.created_at, p.updated_at`;

/** What every lock reads: which workspace a profile is in and whether it was merged away. */
export interface ProfileKey {
  id: string;
  workspace_id: string;
  merged_into: string | null;
}

/** What a lock must read of a profile whose traits may go untouched: no trait documents. */
export interface ProfileHead extends ProfileKey {
  email: string | null;
  created_at: Date;
  updated_at: Date;
}

const KEY_COLUMNS = 'p.id, p.workspace_id, p.merged_into';
const HEAD_COLUMNS = `${KEY_COLUMNS}, p.email, p.created_at, p.updated_at`;

export interface LockedProfiles<Row extends ProfileKey = ProfileRow> {
  /** The rows of the ids asked for (missing ids are absent; a merged-away one shows merged_into). */
  rows: Row[];
  /** The rows merged into them (locked too: a merge of their survivor re-points them). */
  merged: Row[];
  /**
   * False when a profile was merged into a locked one after the lock statement's snapshot: that row
   * is not locked, so the caller must roll back and start again (StaleReadError), never lock it
   * late.
   */
  complete: boolean;
}

/**
 * The one lock order of every writer (worker batches, merges, POST /tenant/profiles, erasure):
 * these profiles and every profile merged into them, FOR UPDATE, in id order, in ONE statement,
 * and no profile row locked by any later statement of the transaction. Two writers can then wait
 * for each other but never deadlock. The merged-away rows are part of the set because merging a
 * profile re-points the rows merged into it (merged_into stays one hop): locking those late, after
 * the live ones, is exactly the deadlock seen under concurrent merges (a transaction holding the
 * merged-away row from a stale read waits for a live one held by the merger, which waits for it).
 */
export function lockProfiles(q: Queryable, ids: readonly string[]): Promise<LockedProfiles> {
  return lockWith<ProfileRow>(q, ids, COLUMNS);
}

/**
 * The same lock, reading only the heads (lockProfiles' rules hold): the worker locks every profile
 * its batch touches, and most of its events (pages, tracks, orders) change no trait, so their
 * attributes and field times are read later, for the profiles that need them (readTraits).
 */
export function lockProfileHeads(q: Queryable, ids: readonly string[]): Promise<LockedProfiles<ProfileHead>> {
  return lockWith<ProfileHead>(q, ids, HEAD_COLUMNS);
}

/**
 * The same lock, reading only the keys: rescoring locks 10,000 profiles per page and needs nothing
 * else of them, and three chunks of rows read, parsed into Dates and dropped at once were part of
 * a fit's memory peak (docs/benchmarks.md, "A fit's memory peak").
 */
export function lockProfileKeys(q: Queryable, ids: readonly string[]): Promise<LockedProfiles<ProfileKey>> {
  return lockWith<ProfileKey>(q, ids, KEY_COLUMNS);
}

async function lockWith<Row extends ProfileKey>(
  q: Queryable,
  ids: readonly string[],
  columns: string,
): Promise<LockedProfiles<Row>> {
  if (ids.length === 0) return { rows: [], merged: [], complete: true };
  const asked = [...new Set(ids)];
  // The set is found by index probes (the asked ids, and the rows merged into each through
  // profiles_merged_into_idx), then locked by primary key in id order: `id = ANY(…) OR merged_into =
  // ANY(…)` was at times a sequential scan of every profile, planned from stale statistics
  // (auto_explain at 1M events). A row whose merged_into changed meanwhile is still locked (its id
  // was listed), which is harmless; `merged` below reads the version the lock returned.
  const { rows: locked } = await q.query<Row>(
    `SELECT ${columns} FROM profiles p
      WHERE p.id = ANY(ARRAY(
              SELECT a.id FROM unnest($1::uuid[]) AS a(id)
              UNION
              SELECT m.id FROM unnest($1::uuid[]) AS a(id)
               ${probeEach('profiles', 'x.merged_into = a.id', 'm', 'x.id')}))
      ORDER BY p.id FOR UPDATE OF p`,
    [asked],
  );
  const wanted = new Set(asked);
  const rows = locked.filter((r) => wanted.has(r.id));
  const merged = locked.filter(
    (r) => !wanted.has(r.id) && r.merged_into !== null && wanted.has(r.merged_into),
  );
  // Nobody can merge into a profile we now hold; one that did so while we waited for its lock is
  // invisible to the statement above (its snapshot predates that commit). One index probe tells.
  const { rows: late } = await q.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM unnest($1::uuid[]) AS a(id)
      ${probeEach('profiles', 'x.merged_into = a.id', 'p', 'x.id')}
      WHERE NOT (p.id = ANY($2::uuid[]))`,
    [rows.filter((r) => r.merged_into === null).map((r) => r.id), locked.map((r) => r.id)],
  );
  return { rows, merged, complete: late[0]!.n === 0 };
}

/** The trait columns of profiles this transaction already holds (lockProfileHeads). */
export type ProfileTraitsRow = Pick<
  ProfileRow,
  'id' | 'email' | 'first_name' | 'last_name' | 'attributes' | 'field_times'
>;

export async function readTraits(q: Queryable, ids: readonly string[]): Promise<ProfileTraitsRow[]> {
  if (ids.length === 0) return [];
  const { rows } = await q.query<ProfileTraitsRow>(
    // A primary-key probe per id (a plain `= ANY` was at times a sequential scan, as in lockWith).
    `SELECT p.id, p.email, p.first_name, p.last_name, p.attributes, p.field_times
       FROM unnest($1::uuid[]) AS a(id) ${probeEach('profiles', 'x.id = a.id', 'p')}`,
    [ids],
  );
  return rows;
}

export interface ProfileWrite {
  id: string;
  workspace_id: string;
  email: string | null;
  first_name: string | null;
  last_name: string | null;
  attributes: JsonObject;
  field_times: FieldTimes;
  merged_into: string | null;
  created_at: string;
}

/**
 * Inserts new profiles and rewrites the trait columns of changed ones, in one statement. Spend and
 * scores are not touched: they belong to commerce and intelligence.
 */
export async function upsertProfiles(
  q: Queryable,
  rows: readonly ProfileWrite[],
  yieldNow: () => Promise<void> = createYielder(),
): Promise<void> {
  if (rows.length === 0) return;
  // Row by row, yielding between rows: a batch of big profiles is megabytes of JSON.
  const json = await stringifyArray(rows, yieldNow);
  await q.query(
    `INSERT INTO profiles (id, workspace_id, email, first_name, last_name, attributes, field_times,
                           merged_into, created_at, updated_at)
     SELECT id, workspace_id, email, first_name, last_name, attributes, field_times, merged_into, created_at, now()
       FROM jsonb_to_recordset($1::jsonb) AS r(id uuid, workspace_id uuid, email text, first_name text,
            last_name text, attributes jsonb, field_times jsonb, merged_into uuid, created_at timestamptz)
     ON CONFLICT (id) DO UPDATE SET email = EXCLUDED.email, first_name = EXCLUDED.first_name,
       last_name = EXCLUDED.last_name, attributes = EXCLUDED.attributes, field_times = EXCLUDED.field_times,
       merged_into = EXCLUDED.merged_into, updated_at = now()`,
    [json],
  );
}

/**
 * After merges: profiles merged into a merged-away one now point at its survivor (one hop, always).
 * The merged-away profiles' events and lineage move with moveMergedHistory (./merge-history).
 */
export async function repointMergedProfiles(
  q: Queryable,
  workspaceId: string,
  moves: ReadonlyArray<{ from: string; to: string }>,
): Promise<void> {
  if (moves.length === 0) return;
  await q.query(
    `UPDATE profiles p SET merged_into = m.to_id FROM ${movesFrom(2)}
      WHERE p.workspace_id = $1 AND p.merged_into = m.from_id`,
    [workspaceId, ...movesParams(moves)],
  );
}

/** A profile's completed orders as commerce sums them up (total: an exact numeric, as text). */
export interface StoredOrderSummary {
  profileId: string;
  total: string;
  count: number;
  firstAt: Date | null;
  lastAt: Date | null;
}

/**
 * Stores total_spend and the completed-order summary (migration 0021) for the profiles whose
 * values changed; unchanged rows are not written.
 */
export async function storeOrderSummary(
  q: Queryable,
  workspaceId: string,
  summaries: readonly StoredOrderSummary[],
): Promise<void> {
  if (summaries.length === 0) return;
  const rows = summaries.map((s) => ({
    id: s.profileId,
    total: s.total,
    n: s.count,
    first_at: s.firstAt?.toISOString() ?? null,
    last_at: s.lastAt?.toISOString() ?? null,
  }));
  await q.query(
    `UPDATE profiles p
        SET total_spend = s.total, completed_orders = s.n, completed_first_at = s.first_at,
            completed_last_at = s.last_at, updated_at = now()
       FROM jsonb_to_recordset($2::jsonb) AS s(id uuid, total numeric, n int, first_at timestamptz,
                                               last_at timestamptz)
      WHERE p.id = s.id AND p.workspace_id = $1
        AND (p.total_spend, p.completed_orders, p.completed_first_at, p.completed_last_at)
            IS DISTINCT FROM (s.total, s.n, s.first_at, s.last_at)`,
    [workspaceId, JSON.stringify(rows)],
  );
}

/**
 * Erasure: deletes the profile rows (merged-away ones first: they reference the survivor). The
 * caller erased what other modules keep of them first. Returns how many went.
 */
export async function deleteProfiles(
  q: Queryable,
  workspaceId: string,
  ids: readonly string[],
): Promise<number> {
  const args = [workspaceId, ids];
  const merged = await q.query(
    'DELETE FROM profiles WHERE workspace_id = $1 AND id = ANY($2::uuid[]) AND merged_into IS NOT NULL',
    args,
  );
  const live = await q.query('DELETE FROM profiles WHERE workspace_id = $1 AND id = ANY($2::uuid[])', args);
  return merged.rowCount + live.rowCount;
}

/** How many profiles were merged into each of these (the merge cap counts them). */
export async function countMergedInto(q: Queryable, ids: readonly string[]): Promise<Map<string, number>> {
  if (ids.length === 0) return new Map();
  const { rows } = await q.query<{ id: string; n: number }>(
    `SELECT merged_into AS id, count(*)::int AS n FROM profiles
      WHERE merged_into = ANY($1::uuid[]) GROUP BY merged_into`,
    [ids],
  );
  return new Map(rows.map((r) => [r.id, r.n]));
}

/**
 * Sets profiles' `email` to its normalized form, each only if it still holds the value read (a write
 * meanwhile wrote a normalized one anyway). Answers how many changed.
 */
export async function setNormalizedEmails(
  q: Queryable,
  changes: ReadonlyArray<{ id: string; from: string; to: string }>,
): Promise<number> {
  if (changes.length === 0) return 0;
  const { rowCount } = await q.query(
    `UPDATE profiles p SET email = c.to_email
       FROM unnest($1::uuid[], $2::text[], $3::text[]) AS c(id, from_email, to_email)
      WHERE p.id = c.id AND p.email = c.from_email`,
    [changes.map((c) => c.id), changes.map((c) => c.from), changes.map((c) => c.to)],
  );
  return rowCount;
}
