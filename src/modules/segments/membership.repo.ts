import type { Queryable } from '../../platform/db';

/** SQL of membership, its change log and the dirty-profile work list, and nothing else. */

export interface Change {
  segmentId: string;
  profileId: string;
  change: 'entered' | 'exited';
}

/**
 * Marks profiles for a membership refresh, only in workspaces that have a saved segment (checked
 * in the same statement, so a segment saved a moment ago is never missed). Answers the workspaces
 * that got new work.
 */
export async function markDirty(
  q: Queryable,
  marks: ReadonlyArray<{ workspaceId: string; profileId: string }>,
): Promise<string[]> {
  if (marks.length === 0) return [];
  const { rows } = await q.query<{ workspace_id: string }>(
    `WITH d AS (SELECT DISTINCT w, p FROM unnest($1::uuid[], $2::uuid[]) AS x(w, p))
     INSERT INTO segment_dirty_profiles (workspace_id, profile_id)
     SELECT w, p FROM d WHERE EXISTS (SELECT 1 FROM segments s WHERE s.workspace_id = d.w)
     ORDER BY w, p
     ON CONFLICT DO NOTHING
     RETURNING workspace_id`,
    [marks.map((m) => m.workspaceId), marks.map((m) => m.profileId)],
  );
  // Sorted: concurrent batches queue their jobs (one key row per workspace) in one order.
  return [...new Set(rows.map((r) => r.workspace_id))].sort();
}

/** Takes up to `limit` dirty profiles of a workspace off the list (the caller's transaction). */
export async function takeDirty(q: Queryable, workspaceId: string, limit: number): Promise<string[]> {
  const { rows } = await q.query<{ profile_id: string }>(
    `DELETE FROM segment_dirty_profiles d
      WHERE d.workspace_id = $1 AND d.profile_id IN (
        SELECT profile_id FROM segment_dirty_profiles WHERE workspace_id = $1
         ORDER BY profile_id LIMIT $2 FOR UPDATE SKIP LOCKED)
      RETURNING d.profile_id`,
    [workspaceId, limit],
  );
  return rows.map((r) => r.profile_id);
}

export async function listDirtyWorkspaces(q: Queryable): Promise<string[]> {
  const { rows } = await q.query<{ workspace_id: string }>(
    'SELECT DISTINCT workspace_id FROM segment_dirty_profiles',
  );
  return rows.map((r) => r.workspace_id);
}

/** The members among these profiles, per segment of the list. */
export async function membersAmong(
  q: Queryable,
  segmentIds: readonly string[],
  profileIds: readonly string[],
): Promise<Array<{ segment_id: string; profile_id: string }>> {
  if (segmentIds.length === 0 || profileIds.length === 0) return [];
  const { rows } = await q.query<{ segment_id: string; profile_id: string }>(
    `SELECT segment_id, profile_id FROM segment_memberships
      WHERE segment_id = ANY($1::text[]) AND profile_id = ANY($2::uuid[])`,
    [segmentIds, profileIds],
  );
  return rows;
}

/**
 * Members of these segments whose profile row lies in the profiles.seq range (lo, hi], or whose profile
 * row is gone: a full evaluation walks the range and must see members it would not select any more.
 */
export async function membersInRange(
  q: Queryable,
  workspaceId: string,
  segmentIds: readonly string[],
  lo: number,
  hi: number | null,
): Promise<Array<{ segment_id: string; profile_id: string }>> {
  const { rows } = await q.query<{ segment_id: string; profile_id: string }>(
    `SELECT m.segment_id, m.profile_id FROM segment_memberships m
       LEFT JOIN profiles p ON p.id = m.profile_id AND p.workspace_id = $1
      WHERE m.segment_id = ANY($2::text[])
        AND (p.id IS NULL OR (p.seq > $3 AND ($4::bigint IS NULL OR p.seq <= $4::bigint)))`,
    [workspaceId, segmentIds, lo, hi],
  );
  return rows;
}

/** Applies entries and exits and records them in the change log, in two statements each. */
export async function applyChanges(q: Queryable, changes: readonly Change[], at: Date): Promise<void> {
  if (changes.length === 0) return;
  const enter = changes.filter((c) => c.change === 'entered');
  const exit = changes.filter((c) => c.change === 'exited');
  const counted: string[] = [];
  if (enter.length > 0) {
    const { rows } = await q.query<{ segment_id: string }>(
      `INSERT INTO segment_memberships (segment_id, profile_id, entered_at)
       SELECT s, p, $3 FROM unnest($1::text[], $2::uuid[]) AS x(s, p)
       ON CONFLICT DO NOTHING RETURNING segment_id`,
      [enter.map((c) => c.segmentId), enter.map((c) => c.profileId), at],
    );
    counted.push(...rows.map((r) => r.segment_id));
  }
  const gone: string[] = [];
  if (exit.length > 0) {
    const { rows } = await q.query<{ segment_id: string }>(
      `DELETE FROM segment_memberships m USING unnest($1::text[], $2::uuid[]) AS x(s, p)
        WHERE m.segment_id = x.s AND m.profile_id = x.p RETURNING m.segment_id`,
      [exit.map((c) => c.segmentId), exit.map((c) => c.profileId)],
    );
    gone.push(...rows.map((r) => r.segment_id));
  }
  await addToCounts(q, counted, gone);
  await q.query(
    `INSERT INTO segment_changes (segment_id, profile_id, change, at)
     SELECT s, p, c, $4 FROM unnest($1::text[], $2::uuid[], $3::text[]) WITH ORDINALITY AS x(s, p, c, n)
     ORDER BY n`,
    [changes.map((c) => c.segmentId), changes.map((c) => c.profileId), changes.map((c) => c.change), at],
  );
}

/**
 * Erasure: every membership, change and pending mark of these profiles goes, with no exit recorded
 * (an exit row or fact would keep a link between the erased id and the segment).
 */
export async function eraseProfiles(
  q: Queryable,
  workspaceId: string,
  profileIds: readonly string[],
): Promise<{ memberships: number; changes: number }> {
  const ws = 'segment_id IN (SELECT id FROM segments WHERE workspace_id = $1)';
  const m = await q.query<{ segment_id: string }>(
    `DELETE FROM segment_memberships WHERE ${ws} AND profile_id = ANY($2::uuid[]) RETURNING segment_id`,
    [workspaceId, profileIds],
  );
  await addToCounts(
    q,
    [],
    m.rows.map((r) => r.segment_id),
  );
  const c = await q.query(`DELETE FROM segment_changes WHERE ${ws} AND profile_id = ANY($2::uuid[])`, [
    workspaceId,
    profileIds,
  ]);
  await q.query(
    'DELETE FROM segment_dirty_profiles WHERE workspace_id = $1 AND profile_id = ANY($2::uuid[])',
    [workspaceId, profileIds],
  );
  return { memberships: m.rowCount, changes: c.rowCount };
}

/** Keeps segments.member_count equal to the rows actually inserted and deleted (their RETURNING). */
async function addToCounts(
  q: Queryable,
  added: readonly string[],
  removed: readonly string[],
): Promise<void> {
  const delta = new Map<string, number>();
  for (const id of added) delta.set(id, (delta.get(id) ?? 0) + 1);
  for (const id of removed) delta.set(id, (delta.get(id) ?? 0) - 1);
  const ids = [...delta.keys()].filter((id) => delta.get(id) !== 0).sort();
  if (ids.length === 0) return;
  await q.query(
    `UPDATE segments s SET member_count = s.member_count + d.n
       FROM unnest($1::text[], $2::int[]) AS d(id, n) WHERE s.id = d.id`,
    [ids, ids.map((id) => delta.get(id)!)],
  );
}

export interface MemberRow {
  seq: number;
  profile_id: string;
  entered_at: Date;
}

export async function listMembers(
  q: Queryable,
  segmentId: string,
  afterSeq: number | null,
  limit: number,
): Promise<MemberRow[]> {
  const { rows } = await q.query<MemberRow>(
    `SELECT seq, profile_id, entered_at FROM segment_memberships
      WHERE segment_id = $1 AND ($2::bigint IS NULL OR seq > $2::bigint) ORDER BY seq LIMIT $3`,
    [segmentId, afterSeq, limit],
  );
  return rows;
}

export interface ChangeRow {
  seq: number;
  profile_id: string;
  change: 'entered' | 'exited';
  at: Date;
}

export async function listChanges(
  q: Queryable,
  segmentId: string,
  afterSeq: number | null,
  limit: number,
): Promise<ChangeRow[]> {
  const { rows } = await q.query<ChangeRow>(
    `SELECT seq, profile_id, change, at FROM segment_changes
      WHERE segment_id = $1 AND ($2::bigint IS NULL OR seq > $2::bigint) ORDER BY seq LIMIT $3`,
    [segmentId, afterSeq, limit],
  );
  return rows;
}

/** VACUUM of the work list: PGlite has no autovacuum, and the list is written and emptied all day. */
export async function vacuumDirty(q: Queryable): Promise<void> {
  await q.exec('VACUUM (ANALYZE) segment_dirty_profiles');
}

/** The segments these profiles are in now, with the segment's name (the access export). */
export async function membershipsOfProfiles(
  q: Queryable,
  workspaceId: string,
  profileIds: readonly string[],
): Promise<Array<{ segment_id: string; name: string; profile_id: string; entered_at: Date }>> {
  const { rows } = await q.query<{ segment_id: string; name: string; profile_id: string; entered_at: Date }>(
    `SELECT m.segment_id, s.name, m.profile_id, m.entered_at
       FROM segment_memberships m JOIN segments s ON s.id = m.segment_id
      WHERE s.workspace_id = $1 AND m.profile_id = ANY($2::uuid[]) ORDER BY m.entered_at, m.segment_id`,
    [workspaceId, profileIds],
  );
  return rows;
}

/** These profiles' entries and exits, oldest first, a page after `afterSeq` (the access export). */
export async function changesOfProfiles(
  q: Queryable,
  workspaceId: string,
  profileIds: readonly string[],
  afterSeq: number,
  limit: number,
): Promise<Array<ChangeRow & { segment_id: string }>> {
  const { rows } = await q.query<ChangeRow & { segment_id: string }>(
    `SELECT c.seq, c.segment_id, c.profile_id, c.change, c.at FROM segment_changes c
      WHERE c.profile_id = ANY($2::uuid[]) AND c.seq > $3
        AND c.segment_id IN (SELECT id FROM segments WHERE workspace_id = $1)
      ORDER BY c.seq LIMIT $4`,
    [workspaceId, profileIds, afterSeq, limit],
  );
  return rows;
}

/** Erasure in slices: at most `limit` of these profiles' change rows go (all when null). */
export async function deleteChangesOfProfiles(
  q: Queryable,
  workspaceId: string,
  profileIds: readonly string[],
  limit: number | null,
): Promise<number> {
  if (profileIds.length === 0) return 0;
  const { rowCount } = await q.query(
    `DELETE FROM segment_changes WHERE seq = ANY(ARRAY(
       SELECT seq FROM segment_changes WHERE profile_id = ANY($2::uuid[])
          AND segment_id IN (SELECT id FROM segments WHERE workspace_id = $1) LIMIT $3))`,
    [workspaceId, profileIds, limit],
  );
  return rowCount;
}
