import { createYielder, stringifyArray } from '../../platform/cooperate';
import type { Queryable } from '../../platform/db';
import type { FieldTimes, Json, JsonObject } from './traits';

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

/** A profile as a read shows it: the row plus its identifiers. */
export interface ProfileReadRow extends ProfileRow {
  identities: Array<{ type: string; value: string }>;
}

const COLUMNS = `p.id, p.seq, p.workspace_id, p.email, p.first_name, p.last_name, p.attributes, p.field_times,
  p.total_spend, p.rfm_segment, p.churn_risk_score, p.predicted_clv, p.merged_into, p.created_at, p.updated_at`;

const IDENTITIES = `COALESCE((SELECT jsonb_agg(jsonb_build_object('type', n.type, 'value', n.value)
    ORDER BY n.first_seen, n.type, n.value) FROM identity_nodes n WHERE n.profile_id = p.id), '[]'::jsonb)
  AS identities`;

export interface LockedProfiles {
  /** The rows of the ids asked for (missing ids are absent; a merged-away one shows merged_into). */
  rows: ProfileRow[];
  /** The rows merged into them (locked too: a merge of their survivor re-points them). */
  merged: ProfileRow[];
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
export async function lockProfiles(q: Queryable, ids: readonly string[]): Promise<LockedProfiles> {
  if (ids.length === 0) return { rows: [], merged: [], complete: true };
  const asked = [...new Set(ids)];
  const { rows: locked } = await q.query<ProfileRow>(
    `SELECT ${COLUMNS} FROM profiles p WHERE p.id = ANY($1::uuid[]) OR p.merged_into = ANY($1::uuid[])
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
    `SELECT count(*)::int AS n FROM profiles p
      WHERE p.merged_into = ANY($1::uuid[]) AND NOT (p.id = ANY($2::uuid[]))`,
    [rows.filter((r) => r.merged_into === null).map((r) => r.id), locked.map((r) => r.id)],
  );
  return { rows, merged, complete: late[0]!.n === 0 };
}

/** What the identity resolver needs to know about a profile: its identifiers and merged-id count. */
export interface ResolverViewRow {
  id: string;
  identities: Array<{ type: string; value: string }>;
  merged_count: number;
}

/** Read only for the profiles a decision needs (a merge or a new identity), not every one locked. */
export async function loadResolverViews(q: Queryable, ids: readonly string[]): Promise<ResolverViewRow[]> {
  if (ids.length === 0) return [];
  const { rows } = await q.query<ResolverViewRow>(
    `SELECT x.id,
       COALESCE((SELECT jsonb_agg(jsonb_build_object('type', n.type, 'value', n.value))
                   FROM identity_nodes n WHERE n.profile_id = x.id AND n.type <> 'anonymous_id'), '[]'::jsonb)
         AS identities,
       (SELECT count(*) FROM profiles m WHERE m.merged_into = x.id)::int AS merged_count
     FROM unnest($1::uuid[]) AS x(id)`,
    [[...new Set(ids)]],
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
 * After merges: profiles merged into a merged-away one now point at its survivor (one hop, always),
 * and the merged-away profiles' events and lineage move to the survivor.
 */
export async function moveMergedHistory(
  q: Queryable,
  workspaceId: string,
  moves: ReadonlyArray<{ from: string; to: string }>,
): Promise<void> {
  if (moves.length === 0) return;
  const m = JSON.stringify(moves.map((x) => ({ from_id: x.from, to_id: x.to })));
  const table = `jsonb_to_recordset($2::jsonb) AS m(from_id uuid, to_id uuid)`;
  await q.query(
    `UPDATE profiles p SET merged_into = m.to_id FROM ${table}
      WHERE p.workspace_id = $1 AND p.merged_into = m.from_id`,
    [workspaceId, m],
  );
  await q.query(
    `UPDATE events e SET profile_id = m.to_id FROM ${table}
      WHERE e.workspace_id = $1 AND e.profile_id = m.from_id`,
    [workspaceId, m],
  );
  await q.query(
    `UPDATE profile_lineage l SET profile_id = m.to_id FROM ${table}
      WHERE l.workspace_id = $1 AND l.profile_id = m.from_id`,
    [workspaceId, m],
  );
}

export interface LineageWrite {
  workspace_id: string;
  profile_id: string;
  path: string;
  old_value: Json;
  new_value: Json;
  source_type: 'event' | 'api_key';
  source_id: string | null;
  merged_from: string | null;
  occurred_at: string;
}

/** Lineage rows per INSERT: a batch of wide writes has hundreds of thousands; this bounds a statement. */
export const LINEAGE_ROWS_PER_STATEMENT = 5000;

export async function insertLineage(
  q: Queryable,
  rows: readonly LineageWrite[],
  yieldNow: () => Promise<void> = createYielder(),
): Promise<void> {
  for (let from = 0; from < rows.length; from += LINEAGE_ROWS_PER_STATEMENT) {
    // The values travel wrapped ({v: …}) so that a JSON null stays distinguishable from "no value".
    const json = await stringifyArray(rows.slice(from, from + LINEAGE_ROWS_PER_STATEMENT), yieldNow, (r) => ({
      ...r,
      old_value: r.old_value === null ? null : { v: r.old_value },
      new_value: { v: r.new_value },
    }));
    await q.query(
      `INSERT INTO profile_lineage (workspace_id, profile_id, path, old_value, new_value, source_type, source_id,
                                    merged_from, occurred_at)
       SELECT workspace_id, profile_id, path, old_value -> 'v', new_value -> 'v', source_type, source_id,
              merged_from, occurred_at
         FROM jsonb_to_recordset($1::jsonb) AS r(workspace_id uuid, profile_id uuid, path text, old_value jsonb,
              new_value jsonb, source_type text, source_id text, merged_from uuid, occurred_at timestamptz)`,
      [json],
    );
  }
}

/** The live profile an id stands for: itself, or the profile it was merged into. */
export async function findSurvivorId(q: Queryable, workspaceId: string, id: string): Promise<string | null> {
  const { rows } = await q.query<{ id: string; merged_into: string | null }>(
    'SELECT id, merged_into FROM profiles WHERE workspace_id = $1 AND id = $2',
    [workspaceId, id],
  );
  const row = rows[0];
  return row ? (row.merged_into ?? row.id) : null;
}

/**
 * The live profile an id names: itself, or the survivor it was merged into. One statement, so one
 * snapshot: a merge committing between "which survivor?" and "read it" cannot make it vanish (a
 * merge re-points every row merged into its secondary, so merged_into is always one hop).
 */
export async function getProfile(
  q: Queryable,
  workspaceId: string,
  id: string,
): Promise<ProfileReadRow | null> {
  const { rows } = await q.query<ProfileReadRow>(
    `SELECT ${COLUMNS}, ${IDENTITIES} FROM profiles s
       JOIN profiles p ON p.id = COALESCE(s.merged_into, s.id)
      WHERE s.workspace_id = $1 AND s.id = $2 AND p.merged_into IS NULL`,
    [workspaceId, id],
  );
  return rows[0] ?? null;
}

export interface ProfileFilter {
  email?: string | undefined;
  /** Profile ids owning the identity filter's nodes (already resolved by the caller). */
  ids?: string[] | undefined;
}

export async function listProfiles(
  q: Queryable,
  workspaceId: string,
  filter: ProfileFilter,
  afterSeq: number | null,
  limit: number,
): Promise<ProfileReadRow[]> {
  const { rows } = await q.query<ProfileReadRow>(
    `SELECT ${COLUMNS}, ${IDENTITIES} FROM profiles p
      WHERE p.workspace_id = $1 AND p.merged_into IS NULL
        AND ($2::bigint IS NULL OR p.seq > $2::bigint)
        AND ($3::text IS NULL OR p.email = $3::text)
        AND ($4::uuid[] IS NULL OR p.id = ANY($4::uuid[]))
      ORDER BY p.seq LIMIT $5`,
    [workspaceId, afterSeq, filter.email ?? null, filter.ids ?? null, limit],
  );
  return rows;
}

/** Live profiles whose e-mail field is this (normalized) address, oldest first. */
export async function findProfileIdsByEmail(
  q: Queryable,
  workspaceId: string,
  email: string,
): Promise<string[]> {
  const { rows } = await q.query<{ id: string }>(
    `SELECT id FROM profiles WHERE workspace_id = $1 AND email = $2 AND merged_into IS NULL ORDER BY seq LIMIT 10`,
    [workspaceId, email],
  );
  return rows.map((r) => r.id);
}

export interface LineageRow {
  seq: number;
  path: string;
  old_value: Json;
  new_value: Json;
  source_type: 'event' | 'api_key';
  source_id: string | null;
  merged_from: string | null;
  occurred_at: Date;
  recorded_at: Date;
}

/** A profile's lineage, newest first. */
export async function listLineage(
  q: Queryable,
  workspaceId: string,
  profileId: string,
  beforeSeq: number | null,
  limit: number,
): Promise<LineageRow[]> {
  const { rows } = await q.query<LineageRow>(
    `SELECT seq, path, old_value, new_value, source_type, source_id, merged_from, occurred_at, recorded_at
       FROM profile_lineage
      WHERE workspace_id = $1 AND profile_id = $2 AND ($3::bigint IS NULL OR seq < $3::bigint)
      ORDER BY seq DESC LIMIT $4`,
    [workspaceId, profileId, beforeSeq, limit],
  );
  return rows;
}

export interface TimelineRow {
  seq: number;
  id: string;
  event_type: string;
  event_name: string;
  anonymous_id: string | null;
  identity: string | null;
  payload: Record<string, unknown>;
  occurred_at: Date;
  received_at: Date;
}

/** A profile's processed events, newest first by event time (ties by arrival). */
export async function listProfileEvents(
  q: Queryable,
  workspaceId: string,
  profileId: string,
  before: { occurredAt: string; seq: number } | null,
  limit: number,
): Promise<TimelineRow[]> {
  const { rows } = await q.query<TimelineRow>(
    `SELECT seq, id, event_type, event_name, anonymous_id, identity, payload, occurred_at, received_at
       FROM events
      WHERE workspace_id = $1 AND profile_id = $2
        AND ($3::timestamptz IS NULL OR (occurred_at, seq) < ($3::timestamptz, $4::bigint))
      ORDER BY occurred_at DESC, seq DESC LIMIT $5`,
    [workspaceId, profileId, before?.occurredAt ?? null, before?.seq ?? 0, limit],
  );
  return rows;
}

/**
 * Erases profiles and everything personal tied to them (contract §5): their processed events,
 * identity nodes (edges go with them), lineage, and the profile rows; orders keep their row but lose
 * the link (the orders.profile_id foreign key sets it to null). Returns how many rows of each went.
 */
export async function eraseProfiles(
  q: Queryable,
  workspaceId: string,
  ids: readonly string[],
): Promise<{ events: number; identity_nodes: number; lineage: number; profiles: number; orders: number }> {
  const args = [workspaceId, ids];
  const orders = await q.query(
    'UPDATE orders SET profile_id = NULL, updated_at = now() WHERE workspace_id = $1 AND profile_id = ANY($2::uuid[])',
    args,
  );
  const events = await q.query(
    'DELETE FROM events WHERE workspace_id = $1 AND profile_id = ANY($2::uuid[])',
    args,
  );
  const lineage = await q.query(
    'DELETE FROM profile_lineage WHERE workspace_id = $1 AND profile_id = ANY($2::uuid[])',
    args,
  );
  const nodes = await q.query(
    'DELETE FROM identity_nodes WHERE workspace_id = $1 AND profile_id = ANY($2::uuid[])',
    args,
  );
  // Merged-away rows first (they reference the survivor), then the survivor.
  const merged = await q.query(
    'DELETE FROM profiles WHERE workspace_id = $1 AND id = ANY($2::uuid[]) AND merged_into IS NOT NULL',
    args,
  );
  const live = await q.query('DELETE FROM profiles WHERE workspace_id = $1 AND id = ANY($2::uuid[])', args);
  return {
    events: events.rowCount,
    identity_nodes: nodes.rowCount,
    lineage: lineage.rowCount,
    profiles: merged.rowCount + live.rowCount,
    orders: orders.rowCount,
  };
}

/** The ids merged into a profile (oldest first). */
export async function listMergedIds(q: Queryable, workspaceId: string, profileId: string): Promise<string[]> {
  const { rows } = await q.query<{ id: string }>(
    'SELECT id FROM profiles WHERE workspace_id = $1 AND merged_into = $2 ORDER BY seq',
    [workspaceId, profileId],
  );
  return rows.map((r) => r.id);
}

export async function insertErasure(
  q: Queryable,
  e: {
    id: string;
    workspaceId: string;
    profileId: string;
    erasedIds: readonly string[];
    apiKeyId: string | null;
    suppressed: boolean;
    counts: Record<string, number>;
  },
): Promise<void> {
  await q.query(
    `INSERT INTO profile_erasures (id, workspace_id, profile_id, erased_profile_ids, api_key_id, suppressed, counts)
     VALUES ($1, $2, $3, $4::uuid[], $5, $6, $7::jsonb)`,
    [e.id, e.workspaceId, e.profileId, e.erasedIds, e.apiKeyId, e.suppressed, JSON.stringify(e.counts)],
  );
}
