import type { Queryable } from '../../platform/db';
import { movedRowsFrom, movesParams } from '../../platform/db/moves';

/**
 * The event log's side of profile erasure and merges: the events table belongs to ingest, so the
 * profiles module reaches these rows only through ./erase.ts.
 */

/** Deletes the events applied to these profiles (contract §5); returns how many went. */
export async function deleteEventsOfProfiles(
  q: Queryable,
  workspaceId: string,
  profileIds: readonly string[],
): Promise<number> {
  const { rowCount } = await q.query(
    'DELETE FROM events WHERE workspace_id = $1 AND profile_id = ANY($2::uuid[])',
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
    `UPDATE events e SET profile_id = x.to_id
       FROM ${movedRowsFrom(2, 'events', 'seq', 'profile_id', 'AND workspace_id = $1')} WHERE e.seq = x.key`,
    [workspaceId, ...movesParams(moves)],
  );
}
