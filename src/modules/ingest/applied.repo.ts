import type { Queryable } from '../../platform/db';
import { eventsBySeq } from './event-record';
import { propertyRows } from './property-rows';

/**
 * The event log's side of processing: the worker records where each event was applied, and drops
 * the events of erased, suppressed people. The log itself is never updated once appended
 * (migrations/0026_event_profiles.sql): the profile an event was applied to is a row of
 * `event_profiles`. The events tables belong to ingest, so the processing module reaches these rows
 * only through the module's index.
 */

/** An event applied to a profile, with the payload it was read with (its property rows are walked from it). */
export interface AppliedEvent {
  seq: number;
  profile_id: string;
  payload: unknown;
}

/**
 * Records the (surviving) profile each event was applied to, and the event's properties as typed
 * rows (migrations/0029_event_properties.sql), which segment `where` tests read instead of the
 * payload. The rows are walked here (property-rows.ts); the statement reads each number's exact
 * value from the stored payload and gives an event with a row too wide for an index its marker
 * alone, exactly as the SQL function `event_property_rows` would.
 */
export async function markEventsApplied(q: Queryable, applied: readonly AppliedEvent[]): Promise<void> {
  if (applied.length === 0) return;
  const seqs: number[] = [];
  const paths: string[] = [];
  const kinds: string[] = [];
  const strs: Array<string | null> = [];
  const bools: Array<boolean | null> = [];
  const ats: Array<string | null> = [];
  for (const a of applied) {
    for (const r of propertyRows(a.payload)) {
      seqs.push(a.seq);
      paths.push(r.path);
      kinds.push(r.kind);
      strs.push(r.str);
      bools.push(r.bool);
      ats.push(r.at);
    }
  }
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
       SELECT seq, workspace_id, profile_id, occurred_at, event_type, event_name FROM src),
     typed AS MATERIALIZED (
       SELECT s.seq, r.path, r.kind,
              CASE WHEN r.kind = 'n' THEN (s.payload #>> string_to_array(r.at, '.'))::numeric END AS num,
              r.str, r.bool
         FROM unnest($3::bigint[], $4::text[], $5::"char"[], $6::text[], $7::boolean[], $8::text[])
              AS r(seq, path, kind, str, bool, at)
         JOIN src s ON s.seq = r.seq),
     -- An index entry holds at most about 2.7 kB; with an event name of up to 200 characters, a row
     -- whose path and value take more than 1600 bytes could not be indexed: its event gets the marker.
     too_wide AS (
       SELECT DISTINCT seq FROM typed
        WHERE octet_length(path) + COALESCE(octet_length(str), 0) + COALESCE(octet_length(num::text), 0) > 1600)
     INSERT INTO event_properties (workspace_id, seq, profile_id, event_name, event_type, occurred_at, path,
                                   kind, num, str, bool)
     SELECT s.workspace_id, s.seq, s.profile_id, s.event_name, s.event_type, s.occurred_at, t.path, t.kind,
            t.num, t.str, t.bool
       FROM typed t JOIN src s ON s.seq = t.seq
      WHERE t.seq NOT IN (SELECT seq FROM too_wide)
     UNION ALL
     SELECT s.workspace_id, s.seq, s.profile_id, s.event_name, s.event_type, s.occurred_at, '', 'x', NULL, NULL,
            NULL
       FROM src s WHERE s.seq IN (SELECT seq FROM too_wide)`,
    [applied.map((a) => a.seq), applied.map((a) => a.profile_id), seqs, paths, kinds, strs, bools, ats],
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
