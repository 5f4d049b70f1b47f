import type { Queryable } from '../../platform/db';
import { movedRowsFrom, movesFrom, movesParams, probeEach } from '../../platform/db/moves';

/**
 * The event log's side of profile erasure and merges: the events tables belong to ingest, so the
 * profiles module reaches these rows only through ./erase.ts. A profile's events are found through
 * `event_profiles` (migrations/0026); their typed properties are rows of `event_properties`
 * (migrations/0029), deleted and moved with them.
 */

/**
 * Deletes the events applied to these profiles (docs/profiles.md), at most `limit` of them (all when
 * null) with their property rows; returns how many went.
 */
export async function deleteEventsOfProfiles(
  q: Queryable,
  workspaceId: string,
  profileIds: readonly string[],
  limit: number | null = null,
): Promise<number> {
  if (profileIds.length === 0) return 0;
  // The log's rows by primary key (ARRAY(…), not a join: without statistics the planner may hash
  // the whole log).
  const { rowCount } = await q.query(
    `WITH picked AS (SELECT seq FROM event_profiles
                      WHERE workspace_id = $1 AND profile_id = ANY($2::uuid[]) LIMIT $3),
          gone AS (DELETE FROM event_profiles WHERE seq = ANY(ARRAY(SELECT seq FROM picked)) RETURNING seq)
     DELETE FROM events WHERE seq = ANY(ARRAY(SELECT seq FROM gone))`,
    [workspaceId, profileIds, limit],
  );
  return rowCount;
}

/**
 * Deletes the typed property rows of these profiles' events, at most `limit` of them (all when
 * null); returns how many went. Rows of events deleted earlier go too: they belong to nobody else.
 */
export async function deletePropertiesOfProfiles(
  q: Queryable,
  workspaceId: string,
  profileIds: readonly string[],
  limit: number | null = null,
): Promise<number> {
  if (profileIds.length === 0) return 0;
  const { rowCount } = await q.query(
    `DELETE FROM event_properties WHERE ctid = ANY(ARRAY(
       SELECT ctid FROM event_properties WHERE workspace_id = $1 AND profile_id = ANY($2::uuid[]) LIMIT $3))`,
    [workspaceId, profileIds, limit],
  );
  return rowCount;
}

/**
 * The log's newest seq handed out (committed or not): every event received before this moment has
 * a seq at most this (an erasure's horizon, src/workflows/erasure.ts).
 */
export async function logHorizon(q: Queryable): Promise<number> {
  const { rows } = await q.query<{ seq: string }>(
    'SELECT CASE WHEN is_called THEN last_value ELSE 0 END AS seq FROM events_seq_seq',
  );
  return Number(rows[0]?.seq ?? 0);
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
