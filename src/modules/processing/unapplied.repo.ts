import type { Queryable } from '../../platform/db';
import { type EventRecord, eventRecordColumns } from '../ingest';

/**
 * Events not applied to any profile: still waiting on the backlog (deferred ones included) or set
 * aside as dead letters. They name their person only by raw identifiers, so an erasure and an access
 * export scan them by workspace in seq order (the backlog is small when the workers keep up; dead
 * letters are few and have their own retention).
 */

/** A waiting or dead-lettered event as a scan reads it: where the scan stands, and the event. */
export interface UnappliedRow {
  /** The scan's position: the backlog's seq, or the dead letter's own seq. */
  pos: number;
  event_seq: number;
  identity: string | null;
  anonymous_id: string | null;
}

/** The backlog of one workspace after `afterSeq`, at most `limit` rows (all when null). */
export async function scanBacklog(
  q: Queryable,
  workspaceId: string,
  afterSeq: number,
  limit: number | null,
): Promise<UnappliedRow[]> {
  const { rows } = await q.query<UnappliedRow>(
    `SELECT seq AS pos, seq AS event_seq, identity, anonymous_id FROM event_backlog
      WHERE workspace_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
    [workspaceId, afterSeq, limit],
  );
  return rows.map((r) => ({ ...r, pos: Number(r.pos), event_seq: Number(r.event_seq) }));
}

/** The dead letters of one workspace after `afterSeq` (their own seq), with their events' identifiers. */
export async function scanDeadLetters(
  q: Queryable,
  workspaceId: string,
  afterSeq: number,
  limit: number | null,
): Promise<UnappliedRow[]> {
  const { rows } = await q.query<UnappliedRow>(
    `SELECT d.seq AS pos, d.event_seq, e.identity, e.anonymous_id
       FROM dead_letters d JOIN LATERAL (SELECT identity, anonymous_id FROM events WHERE seq = d.event_seq) e ON true
      WHERE d.workspace_id = $1 AND d.seq > $2 ORDER BY d.seq LIMIT $3`,
    [workspaceId, afterSeq, limit],
  );
  return rows.map((r) => ({ ...r, pos: Number(r.pos), event_seq: Number(r.event_seq) }));
}

/**
 * Takes these events off the backlog, skipping any a worker holds right now (it finds the event gone
 * when it reads it, and drops it): an erasure never waits for a batch in flight.
 */
export async function dropFromBacklog(q: Queryable, seqs: readonly number[]): Promise<void> {
  if (seqs.length === 0) return;
  await q.query(
    `DELETE FROM event_backlog WHERE seq = ANY(ARRAY(
       SELECT seq FROM event_backlog WHERE seq = ANY($1::bigint[]) FOR UPDATE SKIP LOCKED))`,
    [seqs],
  );
}

/** The waiting and dead-lettered events with these seqs, oldest first (the access export). */
export async function unappliedEvents(
  q: Queryable,
  seqs: readonly number[],
): Promise<Array<EventRecord & { reason: string | null; failed_at: Date | null }>> {
  if (seqs.length === 0) return [];
  const { rows } = await q.query<EventRecord & { reason: string | null; failed_at: Date | null }>(
    `SELECT ${eventRecordColumns('e')}, d.reason, d.created_at AS failed_at
       FROM unnest($1::bigint[]) AS s(seq)
       JOIN LATERAL (SELECT * FROM events WHERE seq = s.seq) e ON true
       LEFT JOIN dead_letters d ON d.event_seq = e.seq
      ORDER BY e.seq`,
    [seqs],
  );
  return rows;
}

/** The oldest seq an event may still be applied at: the backlog's first, or a dead letter's (a retry). */
export async function oldestUnappliedSeq(q: Queryable): Promise<number | null> {
  const { rows } = await q.query<{ seq: string | null }>(
    `SELECT LEAST((SELECT min(seq) FROM event_backlog), (SELECT min(event_seq) FROM dead_letters)) AS seq`,
  );
  return rows[0]?.seq === null || rows[0]?.seq === undefined ? null : Number(rows[0].seq);
}
