import type { Queryable } from '../../platform/db';
import { eventsBySeq } from './event-record';

/**
 * The event log's side of processing: the worker records where each event was applied, and drops
 * the events of erased, suppressed people. The log itself is never updated once appended
 * (migrations/0026_event_profiles.sql): the profile an event was applied to is a row of
 * `event_profiles`. The events tables belong to ingest, so the processing module reaches these rows
 * only through the module's index.
 */

/** An event applied to a profile. */
export interface AppliedEvent {
  seq: number;
  profile_id: string;
}

/**
 * Records the (surviving) profile each event was applied to, and the event's properties as typed
 * rows (migrations/0029_event_properties.sql), which segment `where` tests read instead of the
 * payload.
 */
export async function markEventsApplied(q: Queryable, applied: readonly AppliedEvent[]): Promise<void> {
  if (applied.length === 0) return;
  // The log's columns are copied inside the database, not sent back: a timestamp read into a JS Date
  // loses its microseconds, and the copy must equal the log. One primary-key probe per event (the
  // claim just read those pages), never a hash of the whole log; both tables are written from it.
  await q.query(
    `WITH src AS MATERIALIZED (
       SELECT e.seq, e.workspace_id, u.profile_id, e.occurred_at, e.event_type, e.event_name, e.payload
         FROM unnest($1::bigint[], $2::uuid[]) AS u(seq, profile_id)
         ${eventsBySeq('u.seq', 'e')}),
     applied AS (
       INSERT INTO event_profiles (seq, workspace_id, profile_id, occurred_at, event_type, event_name)
       SELECT seq, workspace_id, profile_id, occurred_at, event_type, event_name FROM src)
     INSERT INTO event_properties (workspace_id, seq, profile_id, event_name, event_type, occurred_at, path,
                                   kind, num, str, bool)
     SELECT s.workspace_id, s.seq, s.profile_id, s.event_name, s.event_type, s.occurred_at, r.path, r.kind,
            r.num, r.str, r.bool
       FROM src s CROSS JOIN LATERAL event_property_rows(s.payload) r`,
    [applied.map((a) => a.seq), applied.map((a) => a.profile_id)],
  );
}

/** Forgets where a processed event was applied (a re-queued dead letter); its id, or null if gone. */
export async function markEventUnprocessed(q: Queryable, seq: number): Promise<string | null> {
  // The property rows are found by their event's key in event_properties_profile_idx.
  await q.query(
    `WITH gone AS (DELETE FROM event_profiles WHERE seq = $1
                   RETURNING workspace_id, profile_id, event_name, occurred_at, seq),
          props AS (DELETE FROM event_properties w USING gone g
                     WHERE w.workspace_id = g.workspace_id AND w.profile_id = g.profile_id
                       AND w.event_name = g.event_name AND w.occurred_at = g.occurred_at AND w.seq = g.seq)
     SELECT 1`,
    [seq],
  );
  const { rows } = await q.query<{ id: string }>('SELECT id FROM events WHERE seq = $1', [seq]);
  return rows[0]?.id ?? null;
}

/** Events of erased-and-suppressed people are not kept: they would only re-identify them. */
export async function deleteEventsBySeq(q: Queryable, seqs: readonly number[]): Promise<void> {
  if (seqs.length === 0) return;
  await q.query('DELETE FROM events WHERE seq = ANY($1::bigint[])', [seqs]);
}
