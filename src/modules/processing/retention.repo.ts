import type { Queryable } from '../../platform/db';
import { deleteEventsBySeq } from '../ingest';

/**
 * Retention of dead letters (docs/operations.md, "Retention"): a dead letter ages from when its
 * event was last set aside (`created_at`, renewed when a retry fails again) and goes with its event,
 * which no profile holds (a dead-lettered event was never applied).
 */

/**
 * Removes at most `limit` dead letters of the workspace set aside before `before`, oldest first,
 * with their events; answers how many went. The dead letter's row is deleted first: one a retry took
 * meanwhile is not there to delete, so its event, back on the backlog, stays.
 */
export async function deleteExpiredDeadLetters(
  q: Queryable,
  workspaceId: string,
  before: Date,
  limit: number,
): Promise<number> {
  const { rows } = await q.query<{ event_seq: string | number }>(
    `DELETE FROM dead_letters WHERE seq = ANY(ARRAY(
       SELECT seq FROM dead_letters WHERE workspace_id = $1 AND created_at < $2 ORDER BY created_at LIMIT $3))
     RETURNING event_seq`,
    [workspaceId, before, limit],
  );
  await deleteEventsBySeq(
    q,
    rows.map((r) => Number(r.event_seq)),
  );
  return rows.length;
}
