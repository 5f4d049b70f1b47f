import type { Queryable } from '../../platform/db';

/**
 * SQL of the suppression list (identifier_suppressions): SHA-256 hashes of erased people's
 * identifiers, blocked for good (?suppress=true) or up to an erasure's horizon (migration 0035).
 */

/**
 * Which of these suppression hashes are on the workspaces' block lists, and until which event seq
 * (null: for good; a number: an erasure's horizon, migration 0035).
 */
export async function findSuppressed(
  q: Queryable,
  keys: ReadonlyArray<{ workspace_id: string; hash: string }>,
): Promise<Array<{ workspace_id: string; hash: string; until_seq: number | null }>> {
  if (keys.length === 0) return [];
  const { rows } = await q.query<{ workspace_id: string; hash: string; until_seq: number | null }>(
    `SELECT s.workspace_id, s.hash, s.until_seq
       FROM jsonb_to_recordset($1::jsonb) AS k(workspace_id uuid, hash text)
       JOIN identifier_suppressions s ON s.workspace_id = k.workspace_id AND s.hash = k.hash`,
    [JSON.stringify(keys)],
  );
  return rows;
}

/**
 * Puts hashes on a workspace's block list: for good (`untilSeq` null) or up to an erasure's horizon.
 * A hash blocked for good stays so; of two horizons the later one holds.
 */
export async function insertSuppressions(
  q: Queryable,
  workspaceId: string,
  hashes: readonly string[],
  untilSeq: number | null = null,
): Promise<void> {
  if (hashes.length === 0) return;
  await q.query(
    `INSERT INTO identifier_suppressions (workspace_id, hash, until_seq) SELECT $1, unnest($2::text[]), $3
     ON CONFLICT (workspace_id, hash) DO UPDATE SET until_seq =
       CASE WHEN identifier_suppressions.until_seq IS NULL OR EXCLUDED.until_seq IS NULL THEN NULL
            ELSE GREATEST(identifier_suppressions.until_seq, EXCLUDED.until_seq) END`,
    [workspaceId, hashes, untilSeq],
  );
}

/** Lifts these hashes off a workspace's block list (for good and horizons alike); answers how many went. */
export async function deleteSuppressions(
  q: Queryable,
  workspaceId: string,
  hashes: readonly string[],
): Promise<number> {
  const { rowCount } = await q.query(
    'DELETE FROM identifier_suppressions WHERE workspace_id = $1 AND hash = ANY($2::text[])',
    [workspaceId, hashes],
  );
  return rowCount;
}

/** Drops every erasure horizon below `seq` (no event up to it waits any more); answers how many went. */
export async function deleteHorizonsBelow(q: Queryable, seq: number): Promise<number> {
  const { rowCount } = await q.query(
    'DELETE FROM identifier_suppressions WHERE until_seq IS NOT NULL AND until_seq < $1',
    [seq],
  );
  return rowCount;
}
