import type { Queryable } from '../../platform/db';

/** Counting stops here: past it the console shows "100,000+" (a count never reads more rows). */
export const COUNT_CAP = 100_000;

/**
 * The workspace's events waiting to be processed (counted up to COUNT_CAP + 1) and the oldest one's
 * seq (the first of the workspace in the backlog's key order).
 */
export async function backlogOf(
  q: Queryable,
  workspaceId: string,
): Promise<{ waiting: number; oldest_seq: string | null }> {
  const { rows } = await q.query<{ waiting: number; oldest_seq: string | null }>(
    `SELECT (SELECT count(*)::int FROM (SELECT 1 FROM event_backlog WHERE workspace_id = $1 LIMIT $2) w) AS waiting,
            (SELECT seq::text FROM event_backlog WHERE workspace_id = $1 ORDER BY seq LIMIT 1) AS oldest_seq`,
    [workspaceId, COUNT_CAP + 1],
  );
  return rows[0] ?? { waiting: 0, oldest_seq: null };
}

/** The workspace's dead letters, counted up to COUNT_CAP + 1 (an index range). */
export async function countDeadLetters(q: Queryable, workspaceId: string): Promise<number> {
  const { rows } = await q.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM (SELECT 1 FROM dead_letters WHERE workspace_id = $1 LIMIT $2) d',
    [workspaceId, COUNT_CAP + 1],
  );
  return rows[0]?.n ?? 0;
}
