import type { Queryable } from '../../platform/db';
import { movedRowsFrom, movesParams } from '../../platform/db/moves';

/**
 * The event log's side of profile erasure and merges: the events tables belong to ingest, so the
 * profiles module reaches these rows only through ./erase.ts. A profile's events are found through
 * `event_profiles` (migrations/0026).
 */

/** Deletes the events applied to these profiles (contract §5); returns how many went. */
export async function deleteEventsOfProfiles(
  q: Queryable,
  workspaceId: string,
  profileIds: readonly string[],
): Promise<number> {
  // The log's rows by primary key (ARRAY(…), not a join: without statistics the planner may hash
  // the whole log).
  const { rowCount } = await q.query(
    `WITH gone AS (DELETE FROM event_profiles WHERE workspace_id = $1 AND profile_id = ANY($2::uuid[])
                   RETURNING seq)
     DELETE FROM events WHERE seq = ANY(ARRAY(SELECT seq FROM gone))`,
    [workspaceId, profileIds],
  );
  return rowCount;
}

/** After merges: the events of each merged-away profile (`from`) now belong to its survivor (`to`). */
export async function moveEventsOfProfiles(
  q: Queryable,
  workspaceId: string,
  moves: ReadonlyArray<{ from: string; to: string }>,
): Promise<void> {
  if (moves.length === 0) return;
  await q.query(
    `UPDATE event_profiles e SET profile_id = x.to_id
       FROM ${movedRowsFrom(2, 'event_profiles', 'seq', 'profile_id', 'AND workspace_id = $1')} WHERE e.seq = x.key`,
    [workspaceId, ...movesParams(moves)],
  );
}
