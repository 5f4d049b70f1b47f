import type { Queryable } from '../../platform/db';

/**
 * Retention of the event log (docs/operations.md, "Retention"): an event ages from its receipt
 * (`received_at`), never from the `timestamp` its sender gave it, so an import of old history is
 * kept as long as anything received that day, and no client clock decides how long its data stays
 * (docs/decisions.md, "Retention").
 */

/**
 * Deletes at most `limit` events of the workspace received before `before`, oldest first, with the
 * record of the profile each was applied to (event_profiles) and its typed property rows; a dead
 * letter goes with its event (its foreign key cascades). Answers how many events went.
 *
 * One statement, one index range scan (`events_received_idx`, migration 0039) and three deletes by
 * key: it holds nothing but the rows it removes. The backlog's row of an event still waiting (the
 * workers stopped for days) is left to the worker, which drops a seq whose event is gone.
 */
export async function deleteExpiredEvents(
  q: Queryable,
  workspaceId: string,
  before: Date,
  limit: number,
): Promise<number> {
  // By primary key through ARRAY(…), not a join: without statistics (PGlite never analyses) the
  // planner may hash a whole table.
  const { rowCount } = await q.query(
    `WITH picked AS (SELECT seq FROM events WHERE workspace_id = $1 AND received_at < $2
                      ORDER BY received_at LIMIT $3),
          properties AS (DELETE FROM event_properties WHERE seq = ANY(ARRAY(SELECT seq FROM picked))),
          applied AS (DELETE FROM event_profiles WHERE seq = ANY(ARRAY(SELECT seq FROM picked)))
     DELETE FROM events WHERE seq = ANY(ARRAY(SELECT seq FROM picked))`,
    [workspaceId, before, limit],
  );
  return rowCount;
}
