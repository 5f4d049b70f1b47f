import type { Queryable } from '../../platform/db';

/**
 * Events received per minute of one workspace since `since` (the counts the log's trigger keeps in
 * `event_minutes`, migration 0030): at most one row per minute and shard, whatever the traffic.
 */
export async function eventMinutesSince(
  q: Queryable,
  workspaceId: string,
  since: Date,
): Promise<Array<{ minute: Date; count: number }>> {
  const { rows } = await q.query<{ minute: Date; count: number }>(
    `SELECT minute, sum(count)::int AS count FROM event_minutes
      WHERE workspace_id = $1 AND minute >= $2 GROUP BY minute ORDER BY minute`,
    [workspaceId, since],
  );
  return rows;
}

/** Forgets the counts of minutes older than `keepMinutes` (the maintenance task). */
export async function pruneEventMinutes(q: Queryable, keepMinutes: number): Promise<number> {
  const { rowCount } = await q.query(
    'DELETE FROM event_minutes WHERE minute < now() - make_interval(mins => $1)',
    [keepMinutes],
  );
  return rowCount;
}

/** When the event with this seq was received (a primary-key probe), or null if it is gone. */
export async function receivedAtOfSeq(q: Queryable, seq: number | string): Promise<Date | null> {
  const { rows } = await q.query<{ received_at: Date }>('SELECT received_at FROM events WHERE seq = $1', [
    seq,
  ]);
  return rows[0]?.received_at ?? null;
}
