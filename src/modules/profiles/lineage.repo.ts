import { createYielder } from '../../platform/cooperate';
import type { Queryable } from '../../platform/db';
import { movedRowsFrom, movesParams } from '../../platform/db/moves';
import type { Json } from './traits';

/** SQL of profile_lineage: every field-level change of a profile (docs/profiles.md, lineage). */

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
    const chunk = rows.slice(from, from + LINEAGE_ROWS_PER_STATEMENT);
    // One array per column: a JSON document of every row repeats each column's name per row, and
    // parsing it was a quarter of the statement (docs/benchmarks.md). The values are JSON texts, so
    // a JSON null stays distinguishable from "no value" (SQL NULL). Serialized row by row, yielding
    // between rows: one statement's values can be megabytes.
    const oldValues: Array<string | null> = [];
    const newValues: string[] = [];
    for (const r of chunk) {
      oldValues.push(r.old_value === null ? null : JSON.stringify(r.old_value));
      newValues.push(JSON.stringify(r.new_value));
      await yieldNow();
    }
    await q.query(
      `INSERT INTO profile_lineage (workspace_id, profile_id, path, old_value, new_value, source_type, source_id,
                                    merged_from, occurred_at)
       SELECT workspace_id, profile_id, path, old_value::jsonb, new_value::jsonb, source_type, source_id,
              merged_from, occurred_at
         FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
                     $8::uuid[], $9::timestamptz[])
           AS r(workspace_id, profile_id, path, old_value, new_value, source_type, source_id, merged_from,
                occurred_at)`,
      [
        chunk.map((r) => r.workspace_id),
        chunk.map((r) => r.profile_id),
        chunk.map((r) => r.path),
        oldValues,
        newValues,
        chunk.map((r) => r.source_type),
        chunk.map((r) => r.source_id),
        chunk.map((r) => r.merged_from),
        chunk.map((r) => r.occurred_at),
      ],
    );
  }
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

/** After merges: the merged-away profiles' lineage moves to their survivors. */
export async function moveLineage(
  q: Queryable,
  workspaceId: string,
  moves: ReadonlyArray<{ from: string; to: string }>,
): Promise<void> {
  if (moves.length === 0) return;
  await q.query(
    `UPDATE profile_lineage l SET profile_id = x.to_id
       FROM ${movedRowsFrom(2, 'profile_lineage', 'seq', 'profile_id', 'AND workspace_id = $1')} WHERE l.seq = x.key`,
    [workspaceId, ...movesParams(moves)],
  );
}

/**
 * Erasure: the lineage of these profiles goes (it has no foreign key to cascade), at most `limit`
 * rows (all when null). Returns how many.
 */
export async function deleteLineage(
  q: Queryable,
  workspaceId: string,
  ids: readonly string[],
  limit: number | null = null,
): Promise<number> {
  if (ids.length === 0) return 0;
  const { rowCount } = await q.query(
    `DELETE FROM profile_lineage WHERE seq = ANY(ARRAY(
       SELECT seq FROM profile_lineage WHERE workspace_id = $1 AND profile_id = ANY($2::uuid[]) LIMIT $3))`,
    [workspaceId, ids, limit],
  );
  return rowCount;
}

/** The lineage of these profiles, oldest first, a page after `afterSeq` (the access export). */
export async function lineagePage(
  q: Queryable,
  workspaceId: string,
  ids: readonly string[],
  afterSeq: number,
  limit: number,
): Promise<Array<LineageRow & { profile_id: string }>> {
  const { rows } = await q.query<LineageRow & { profile_id: string }>(
    `SELECT seq, profile_id, path, old_value, new_value, source_type, source_id, merged_from, occurred_at, recorded_at
       FROM profile_lineage WHERE workspace_id = $1 AND profile_id = ANY($2::uuid[]) AND seq > $3
      ORDER BY seq LIMIT $4`,
    [workspaceId, ids, afterSeq, limit],
  );
  return rows;
}
