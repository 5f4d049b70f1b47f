import type { Queryable } from '../../platform/db';
import { type EventRecord, eventRecordColumns, eventsBySeq } from '../ingest';

/**
 * A profile's timeline: a read of the event log (owned by ingest) by profile id, kept here because it
 * is a profile read model; ingest's erase.ts is the only way profiles change those rows. The events
 * applied to a profile are listed by `event_profiles` (migrations/0026) and read from the log by seq.
 */

/** A timeline row is the ingest module's EventRecord (one shape for every reader of the log). */
export type TimelineRow = EventRecord;

/** A profile's processed events, newest first by event time (ties by arrival). */
export async function listProfileEvents(
  q: Queryable,
  workspaceId: string,
  profileId: string,
  before: { occurredAt: string; seq: number } | null,
  limit: number,
): Promise<TimelineRow[]> {
  const { rows } = await q.query<TimelineRow>(
    // One primary-key probe of the log per listed event, never a hash of it.
    `SELECT ${eventRecordColumns('e')}
       FROM (SELECT seq, occurred_at FROM event_profiles
              WHERE workspace_id = $1 AND profile_id = $2
                AND ($3::timestamptz IS NULL OR (occurred_at, seq) < ($3::timestamptz, $4::bigint))
              ORDER BY occurred_at DESC, seq DESC LIMIT $5) a
       ${eventsBySeq('a.seq', 'e')}
      ORDER BY a.occurred_at DESC, a.seq DESC`,
    [workspaceId, profileId, before?.occurredAt ?? null, before?.seq ?? 0, limit],
  );
  return rows;
}
