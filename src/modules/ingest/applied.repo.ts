import type { Queryable } from '../../platform/db';

/**
 * The event log's side of processing: the worker records where each event was applied, and drops
 * the events of erased, suppressed people. The events table belongs to ingest, so the processing
 * module reaches these rows only through the module's index.
 */

/** Marks events processed and records the (surviving) profile each was applied to. */
export async function markEventsApplied(
  q: Queryable,
  applied: ReadonlyArray<{ seq: number; profile_id: string | null }>,
): Promise<void> {
  if (applied.length === 0) return;
  // Two arrays, not one jsonb document: cheaper to send and to unpack for a thousand rows.
  await q.query(
    `UPDATE events e SET processed_at = now(), profile_id = u.profile_id
       FROM unnest($1::bigint[], $2::uuid[]) AS u(seq, profile_id)
      WHERE e.seq = u.seq`,
    [applied.map((a) => a.seq), applied.map((a) => a.profile_id)],
  );
}

/** Puts a processed event back in the unprocessed state (a re-queued dead letter); its id, or null. */
export async function markEventUnprocessed(q: Queryable, seq: number): Promise<string | null> {
  const { rows } = await q.query<{ id: string }>(
    'UPDATE events SET processed_at = NULL, profile_id = NULL WHERE seq = $1 RETURNING id',
    [seq],
  );
  return rows[0]?.id ?? null;
}

/** Events of erased-and-suppressed people are not kept: they would only re-identify them. */
export async function deleteEventsBySeq(q: Queryable, seqs: readonly number[]): Promise<void> {
  if (seqs.length === 0) return;
  await q.query('DELETE FROM events WHERE seq = ANY($1::bigint[])', [seqs]);
}
