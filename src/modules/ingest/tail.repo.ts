import type { Queryable } from '../../platform/db';

/** A row of the log's tail: every seq, and the event itself only for a watched workspace. */
export interface TailRow {
  seq: string;
  workspace_id: string | null;
  id: string | null;
  event_type: string | null;
  event_name: string | null;
  anonymous_id: string | null;
  identity: string | null;
  payload: Record<string, unknown> | null;
  occurred_at: Date | null;
  received_at: Date | null;
}

/**
 * The log after `afterSeq` (and the seqs in `recheck`, which were missing from an earlier read:
 * appends still committing then), in seq order, at most `limit` rows: a range of the primary key.
 * Rows of workspaces not in `workspaces` carry only their seq, so the caller can tell a seq that is
 * not there yet from one that belongs to someone else (the live event stream, modules/console).
 */
export async function readLogTail(
  q: Queryable,
  afterSeq: string,
  recheck: readonly string[],
  workspaces: readonly string[],
  limit: number,
): Promise<TailRow[]> {
  const { rows } = await q.query<TailRow>(
    `SELECT n::text AS seq,
            CASE WHEN w THEN workspace_id END AS workspace_id, CASE WHEN w THEN id END AS id,
            CASE WHEN w THEN event_type END AS event_type, CASE WHEN w THEN event_name END AS event_name,
            CASE WHEN w THEN anonymous_id END AS anonymous_id, CASE WHEN w THEN identity END AS identity,
            CASE WHEN w THEN payload END AS payload, CASE WHEN w THEN occurred_at END AS occurred_at,
            CASE WHEN w THEN received_at END AS received_at
       FROM (SELECT e.seq AS n, e.*, e.workspace_id = ANY($3::uuid[]) AS w
               FROM ((SELECT * FROM events WHERE seq > $1::bigint ORDER BY seq LIMIT $4)
                     UNION ALL
                     (SELECT * FROM events WHERE seq = ANY($2::bigint[]) AND seq <= $1::bigint)) e) t
      ORDER BY n`,
    [afterSeq, recheck, workspaces, limit],
  );
  return rows;
}

/** The last seq of the log ('0' when empty): where a new stream starts. */
export async function lastLogSeq(q: Queryable): Promise<string> {
  const { rows } = await q.query<{ seq: string | null }>('SELECT max(seq)::text AS seq FROM events');
  return rows[0]?.seq ?? '0';
}
