import type { Queryable } from '../../platform/db';
import type { ProfileSummary } from './fact-profile';
import { COLUMNS, type ProfileRow } from './profiles.repo';

/**
 * Reads of profiles as the API shows them. A read carries the profile's identifiers, read from the
 * identity graph in the same statement (one snapshot: a merge committing meanwhile cannot make a
 * profile show another's identifiers); the graph's rows are only read here, never written.
 */

/** A profile as a read shows it: the row plus its identifiers. */
export interface ProfileReadRow extends ProfileRow {
  identities: Array<{ type: string; value: string }>;
}

const IDENTITIES = `COALESCE((SELECT jsonb_agg(jsonb_build_object('type', n.type, 'value', n.value)
    ORDER BY n.first_seen, n.type, n.value) FROM identity_nodes n WHERE n.profile_id = p.id), '[]'::jsonb)
  AS identities`;

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

/** These live profiles, in no particular order (an id that is not live is left out). */
export async function getLiveProfiles(
  q: Queryable,
  workspaceId: string,
  ids: readonly string[],
): Promise<ProfileReadRow[]> {
  if (ids.length === 0) return [];
  const { rows } = await q.query<ProfileReadRow>(
    `SELECT ${COLUMNS}, ${IDENTITIES} FROM profiles p
      WHERE p.workspace_id = $1 AND p.id = ANY($2::uuid[]) AND p.merged_into IS NULL`,
    [workspaceId, ids],
  );
  return rows;
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

/** The ids merged into a profile (oldest first). */
export async function listMergedIds(q: Queryable, workspaceId: string, profileId: string): Promise<string[]> {
  const { rows } = await q.query<{ id: string }>(
    'SELECT id FROM profiles WHERE workspace_id = $1 AND merged_into = $2 ORDER BY seq',
    [workspaceId, profileId],
  );
  return rows.map((r) => r.id);
}

/**
 * Of these profile ids, the ones merged away, each with its survivor (merged_into is kept one hop
 * from the survivor), in one statement: one snapshot to read owners read earlier by.
 */
export async function findSurvivors(q: Queryable, ids: readonly string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const { rows } = await q.query<{ id: string; merged_into: string }>(
    'SELECT id, merged_into FROM profiles WHERE id = ANY($1::uuid[]) AND merged_into IS NOT NULL',
    [[...new Set(ids)]],
  );
  return new Map(rows.map((r) => [r.id, r.merged_into]));
}

/**
 * Merged-away profiles of every workspace after `afterSeq`, in seq order, each with its survivor
 * (merged_into is kept one hop from the survivor): a page for repairs that walk every past merge.
 */
export async function listMergedAway(
  q: Queryable,
  afterSeq: number,
  limit: number,
): Promise<Array<{ seq: number; workspace_id: string; id: string; merged_into: string }>> {
  const { rows } = await q.query<{ seq: number; workspace_id: string; id: string; merged_into: string }>(
    `SELECT seq, workspace_id, id, merged_into FROM profiles
      WHERE seq > $1 AND merged_into IS NOT NULL ORDER BY seq LIMIT $2`,
    [afterSeq, limit],
  );
  return rows;
}

/**
 * The summaries of these profiles of a workspace (merged-away ids read as their survivor), in one
 * statement: for the facts other modules write about a profile.
 */
export async function getProfileSummaries(
  q: Queryable,
  workspaceId: string,
  ids: readonly string[],
): Promise<Map<string, ProfileSummary>> {
  const out = new Map<string, ProfileSummary>();
  if (ids.length === 0) return out;
  const { rows } = await q.query<ProfileSummary & { asked: string }>(
    `SELECT s.id AS asked, p.id, p.email, p.first_name, p.last_name
       FROM unnest($2::uuid[]) AS a(id)
       JOIN profiles s ON s.workspace_id = $1 AND s.id = a.id
       JOIN profiles p ON p.id = COALESCE(s.merged_into, s.id)`,
    [workspaceId, [...new Set(ids)]],
  );
  for (const { asked, ...summary } of rows) out.set(asked, summary);
  return out;
}

/**
 * The upper `seq` bound of the slice of a workspace's live profiles that starts after `after`: the
 * seq of the `size`-th live profile, or null when fewer remain (the slice then runs to the end).
 * What every walk over a workspace in slices uses (segment evaluations, the intelligence summary).
 */
export async function liveProfileSliceEnd(
  q: Queryable,
  workspaceId: string,
  after: number,
  size: number,
): Promise<number | null> {
  const { rows } = await q.query<{ seq: number }>(
    `SELECT seq FROM profiles WHERE workspace_id = $1 AND merged_into IS NULL AND seq > $2
      ORDER BY seq OFFSET $3 LIMIT 1`,
    [workspaceId, after, size - 1],
  );
  return rows[0]?.seq ?? null;
}

/**
 * The repair of look-alike identifiers: live profiles whose `email` normalization may change (not
 * plain ASCII, or ending in a dot), read by a window of `window` profiles in seq order (`last`: the
 * window's last seq, null when the walk is done).
 */
export async function scanLookAlikeEmails(
  q: Queryable,
  afterSeq: number,
  window: number,
): Promise<{ last: number | null; rows: Array<{ id: string; workspace_id: string; email: string }> }> {
  const { rows } = await q.query<{ last: string; id: string | null; workspace_id: string; email: string }>(
    `WITH w AS (SELECT seq, id, workspace_id, email, merged_into FROM profiles WHERE seq > $1 ORDER BY seq LIMIT $2)
     SELECT l.last, w.id, w.workspace_id, w.email
       FROM (SELECT seq AS last FROM w ORDER BY seq DESC LIMIT 1) l
       LEFT JOIN w ON w.merged_into IS NULL AND w.email IS NOT NULL
                  AND (octet_length(w.email) <> char_length(w.email) OR w.email LIKE '%.')`,
    [afterSeq, window],
  );
  const last = rows[0] ? Number(rows[0].last) : null;
  return {
    last,
    rows: rows
      .filter((r) => r.id !== null)
      .map((r) => ({ id: r.id!, workspace_id: r.workspace_id, email: r.email })),
  };
}
