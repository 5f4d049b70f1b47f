import type { Queryable } from '../../platform/db';
import { movedRowsFrom, movesFrom, movesParams, probeEach } from '../../platform/db/moves';

/**
 * The event log's side of profile erasure and merges: the events tables belong to ingest, so the
 * profiles module reaches these rows only through ./erase.ts. A profile's events are found through
 * `event_profiles` (migrations/0026); their typed properties are rows of `event_properties`
 * (migrations/0029), deleted and moved with them.
 */

/** Deletes the events applied to these profiles (docs/profiles.md); returns how many went. */
export async function deleteEventsOfProfiles(
  q: Queryable,
  workspaceId: string,
  profileIds: readonly string[],
): Promise<number> {
  // The log's rows by primary key (ARRAY(…), not a join: without statistics the planner may hash
  // the whole log).
  const { rowCount } = await q.query(
    `WITH gone AS (DELETE FROM event_profiles WHERE workspace_id = $1 AND profile_id = ANY($2::uuid[])
                   RETURNING seq),
          props AS (DELETE FROM event_properties WHERE workspace_id = $1 AND profile_id = ANY($2::uuid[]))
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
  // The events' property rows carry the profile too (migration 0029): found by profile, one index
  // probe per move, and updated by their row id.
  await q.query(
    `WITH moved AS (
       UPDATE event_profiles e SET profile_id = x.to_id
         FROM ${movedRowsFrom(2, 'event_profiles', 'seq', 'profile_id', 'AND workspace_id = $1')}
        WHERE e.seq = x.key)
     UPDATE event_properties w SET profile_id = y.to_id
       FROM ${movesFrom(2)}
            ${probeEach('event_properties', 'x.workspace_id = $1 AND x.profile_id = m.from_id', 'y', 'x.ctid AS row_id, m.to_id')}
      WHERE w.ctid = y.row_id`,
    [workspaceId, ...movesParams(moves)],
  );
}
