import type { Queryable } from '../../platform/db';

/** SQL of saved segment definitions (table `segments`), and nothing else. */

export interface SegmentRow {
  seq: number;
  id: string;
  workspace_id: string;
  name: string;
  description: string | null;
  query: unknown;
  refs: string[];
  timed: boolean;
  full_after_seq: number | null;
  member_count: number;
  created_at: Date;
  updated_at: Date;
}

/** What evaluation needs of every segment of a workspace. */
export interface DefinitionRow {
  id: string;
  query: unknown;
  refs: string[];
  timed: boolean;
  full_after_seq: number | null;
}

const COLUMNS = `s.seq, s.id, s.workspace_id, s.name, s.description, s.query, s.refs, s.timed,
  s.full_after_seq, s.member_count, s.created_at, s.updated_at`;

/**
 * Serialises, per workspace, every change of segment definitions and every membership refresh, in
 * the calling transaction: two saves cannot build a cycle between them, a count limit holds, and
 * membership changes are decided (and their seq numbers handed out) one refresh at a time.
 */
export async function lockWorkspaceSegments(q: Queryable, workspaceId: string): Promise<void> {
  await q.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`cdp.segments:${workspaceId}`]);
}

export async function countSegments(q: Queryable, workspaceId: string): Promise<number> {
  const { rows } = await q.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM segments WHERE workspace_id = $1',
    [workspaceId],
  );
  return rows[0]!.n;
}

export interface NewSegment {
  id: string;
  workspaceId: string;
  name: string;
  description: string | null;
  query: unknown;
  refs: string[];
  timed: boolean;
}

export async function insertSegment(q: Queryable, s: NewSegment): Promise<void> {
  await q.query(
    `INSERT INTO segments (id, workspace_id, name, description, query, refs, timed, full_after_seq)
     VALUES ($1, $2, $3, $4, $5::jsonb, $6::text[], $7, 0)`,
    [s.id, s.workspaceId, s.name, s.description, JSON.stringify(s.query), s.refs, s.timed],
  );
}

export interface SegmentPatch {
  name?: string | undefined;
  description?: string | null | undefined;
  /** A new query restarts the full evaluation. */
  query?: { query: unknown; refs: string[]; timed: boolean } | undefined;
}

export async function updateSegment(
  q: Queryable,
  workspaceId: string,
  id: string,
  patch: SegmentPatch,
): Promise<boolean> {
  const { rowCount } = await q.query(
    `UPDATE segments SET
        name = COALESCE($3, name),
        description = CASE WHEN $4::boolean THEN $5 ELSE description END,
        query = COALESCE($6::jsonb, query),
        refs = COALESCE($7::text[], refs),
        timed = COALESCE($8, timed),
        full_after_seq = CASE WHEN $6::jsonb IS NULL THEN full_after_seq ELSE 0 END,
        updated_at = now()
      WHERE workspace_id = $1 AND id = $2`,
    [
      workspaceId,
      id,
      patch.name ?? null,
      patch.description !== undefined,
      patch.description ?? null,
      patch.query ? JSON.stringify(patch.query.query) : null,
      patch.query?.refs ?? null,
      patch.query?.timed ?? null,
    ],
  );
  return rowCount > 0;
}

export async function deleteSegment(q: Queryable, workspaceId: string, id: string): Promise<boolean> {
  const { rowCount } = await q.query('DELETE FROM segments WHERE workspace_id = $1 AND id = $2', [
    workspaceId,
    id,
  ]);
  return rowCount > 0;
}

export async function getSegment(q: Queryable, workspaceId: string, id: string): Promise<SegmentRow | null> {
  const { rows } = await q.query<SegmentRow>(
    `SELECT ${COLUMNS} FROM segments s WHERE s.workspace_id = $1 AND s.id = $2`,
    [workspaceId, id],
  );
  return rows[0] ?? null;
}

/** Segments in creation order; with `memberOf`, only those that profile is a member of now. */
export async function listSegments(
  q: Queryable,
  workspaceId: string,
  memberOf: string | null,
  afterSeq: number | null,
  limit: number,
): Promise<SegmentRow[]> {
  const { rows } = await q.query<SegmentRow>(
    `SELECT ${COLUMNS} FROM segments s
      WHERE s.workspace_id = $1 AND ($2::bigint IS NULL OR s.seq > $2::bigint)
        AND ($3::uuid IS NULL OR EXISTS (SELECT 1 FROM segment_memberships m
                                          WHERE m.segment_id = s.id AND m.profile_id = $3::uuid))
      ORDER BY s.seq LIMIT $4`,
    [workspaceId, afterSeq, memberOf, limit],
  );
  return rows;
}

export async function listDefinitions(q: Queryable, workspaceId: string): Promise<DefinitionRow[]> {
  const { rows } = await q.query<DefinitionRow>(
    'SELECT id, query, refs, timed, full_after_seq FROM segments WHERE workspace_id = $1 ORDER BY seq',
    [workspaceId],
  );
  return rows;
}

/**
 * The version of the workspace's definitions: a new value of a sequence, set by a trigger whenever a
 * segment's query, references or time flag is written (migration 0034); "0" before the first.
 */
export async function definitionsVersion(q: Queryable, workspaceId: string): Promise<string> {
  const { rows } = await q.query<{ version: string }>(
    'SELECT version::text AS version FROM segment_definition_versions WHERE workspace_id = $1',
    [workspaceId],
  );
  return rows[0]?.version ?? '0';
}

/** Where each segment of the workspace whose full evaluation is under way has got to. */
export async function pendingFull(
  q: Queryable,
  workspaceId: string,
): Promise<Array<{ id: string; full_after_seq: number }>> {
  const { rows } = await q.query<{ id: string; full_after_seq: number }>(
    `SELECT id, full_after_seq FROM segments
      WHERE workspace_id = $1 AND full_after_seq IS NOT NULL ORDER BY seq`,
    [workspaceId],
  );
  return rows;
}

/** The names of these segments (for the facts of their entries and exits). */
export async function segmentNames(q: Queryable, ids: readonly string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const { rows } = await q.query<{ id: string; name: string }>(
    'SELECT id, name FROM segments WHERE id = ANY($1::text[])',
    [[...new Set(ids)]],
  );
  return new Map(rows.map((r) => [r.id, r.name]));
}

/** The segments that refer to this one directly. */
export async function listReferrers(q: Queryable, workspaceId: string, id: string): Promise<string[]> {
  const { rows } = await q.query<{ id: string }>(
    'SELECT id FROM segments WHERE workspace_id = $1 AND $2 = ANY(refs) ORDER BY seq',
    [workspaceId, id],
  );
  return rows.map((r) => r.id);
}

/** Gives up the full evaluations of segments that cannot be evaluated (logged by the caller). */
export async function abandonFull(q: Queryable, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await q.query(
    'UPDATE segments SET full_after_seq = NULL WHERE id = ANY($1::text[]) AND full_after_seq IS NOT NULL',
    [ids],
  );
}

/** Records how far a full evaluation got; null: done. */
export async function setFullProgress(
  q: Queryable,
  id: string,
  afterSeq: number | null,
  ifAt: number,
): Promise<void> {
  // `ifAt`: a PATCH that restarted the evaluation meanwhile wins over this progress mark.
  await q.query('UPDATE segments SET full_after_seq = $2 WHERE id = $1 AND full_after_seq = $3', [
    id,
    afterSeq,
    ifAt,
  ]);
}

/**
 * Starts a full evaluation of the given segments. `restart`: also those with one under way (their
 * query changed); otherwise they keep going (the time-window schedule must not starve them).
 */
export async function startFull(
  q: Queryable,
  workspaceId: string,
  ids: readonly string[],
  restart: boolean,
): Promise<number> {
  const { rowCount } = await q.query(
    `UPDATE segments SET full_after_seq = 0
      WHERE workspace_id = $1 AND id = ANY($2::text[]) AND ($3::boolean OR full_after_seq IS NULL)`,
    [workspaceId, ids, restart],
  );
  return rowCount;
}

/** Workspaces with a full evaluation pending (the sweep schedule's safety net). */
export async function listWorkspacesWithPendingFull(q: Queryable): Promise<string[]> {
  const { rows } = await q.query<{ workspace_id: string }>(
    'SELECT DISTINCT workspace_id FROM segments WHERE full_after_seq IS NOT NULL',
  );
  return rows.map((r) => r.workspace_id);
}

export async function listWorkspacesWithTimedSegments(q: Queryable): Promise<string[]> {
  const { rows } = await q.query<{ workspace_id: string }>(
    'SELECT DISTINCT workspace_id FROM segments WHERE timed',
  );
  return rows.map((r) => r.workspace_id);
}
