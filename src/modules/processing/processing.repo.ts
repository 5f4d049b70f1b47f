import { notify, type Queryable } from '../../platform/db';
import { newSortableId } from '../../platform/ids';
import { type EventRecord, eventRecordColumns } from '../ingest';

/** An event as the pipeline reads it: the log's one record shape, with its workspace and key. */
export type ClaimedEvent = EventRecord & {
  workspace_id: string;
  api_key_id: string | null;
  /** The consent choices the event carried, if any (events.consent). */
  consent: Record<string, boolean> | null;
};

/** Columns of a claimed event: the event as the pipeline reads it. */
const EVENT_COLUMNS = `${eventRecordColumns('e')}, e.workspace_id, e.api_key_id, e.consent`;

/*
 * The joins from the backlog to the log are LATERAL on purpose: one primary-key probe per waiting
 * event. A plain join lets the planner hash the whole log (a sequential scan of every event ever
 * received: 95 ms at 100k events, measured) whenever its statistics are stale, which they are
 * without autovacuum.
 */

/**
 * Claims the oldest waiting events that no other worker holds (migrations/0006_event_backlog.sql)
 * and takes them off the backlog in the same statement: a deleted row stays locked until the
 * claiming transaction ends, exactly as a `FOR UPDATE` one would (other claims skip it, other
 * workers' order guards still see it), and one row write replaces a lock and a later DELETE. The
 * transaction marks the events processed; if it rolls back, the rows are back. Events the pipeline
 * defers go back on the backlog (returnToBacklog). A seq whose event is gone (its workspace deleted,
 * or erased) comes back with `id` null.
 */
export async function claimEvents(
  q: Queryable,
  limit: number,
): Promise<{ events: ClaimedEvent[]; gone: number[] }> {
  const { rows } = await q.query<ClaimedEvent & { claimed: number }>(
    // `= ANY(ARRAY(…))`, not `IN (…)`: the IN became, at times, a hash join over a sequential scan
    // of the whole backlog (auto_explain, 1M events waiting).
    `WITH c AS (DELETE FROM event_backlog
                  WHERE seq = ANY(ARRAY(SELECT seq FROM event_backlog ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED))
                  RETURNING seq)
     SELECT c.seq AS claimed, ${EVENT_COLUMNS}
       FROM c LEFT JOIN LATERAL (SELECT * FROM events WHERE seq = c.seq) e ON true ORDER BY c.seq`,
    [limit],
  );
  const events: ClaimedEvent[] = [];
  const gone: number[] = [];
  for (const { claimed, ...e } of rows) {
    if (e.id === null) gone.push(Number(claimed));
    else events.push(e);
  }
  return { events, gone };
}

/** Claims one given event if it is still waiting and free (dead-lettering it). */
export async function claimEvent(q: Queryable, seq: number): Promise<ClaimedEvent | null> {
  const { rows } = await q.query<ClaimedEvent>(
    `SELECT ${EVENT_COLUMNS} FROM event_backlog b JOIN events e ON e.seq = b.seq
      WHERE b.seq = $1 FOR UPDATE OF b SKIP LOCKED`,
    [seq],
  );
  return rows[0] ?? null;
}

export interface PendingEvent {
  seq: number;
  workspace_id: string;
  anonymous_id: string | null;
  identity: string | null;
  /** The payload's `order_id` as text, for an order event (migrations/0043); else null. */
  order_id: string | null;
}

/**
 * Waiting events older than `beforeSeq` that are not in this batch: held by another worker right
 * now (or just released by one). An event of this batch sharing an identifier, a profile or an order
 * with one of them must wait, so that one profile's (and one order's) events are applied in order.
 */
export async function findPendingBefore(
  q: Queryable,
  beforeSeq: number,
  mine: readonly number[],
  limit: number,
): Promise<PendingEvent[]> {
  // The backlog row carries the identifiers (migrations/0009) and the order id (0043): no probe of
  // the event log.
  const { rows } = await q.query<PendingEvent>(
    `SELECT seq, workspace_id, anonymous_id, identity, order_id FROM event_backlog
      WHERE seq < $1 AND seq <> ALL($2::bigint[]) ORDER BY seq LIMIT $3`,
    [beforeSeq, mine, limit],
  );
  return rows;
}

/** Takes these events off the backlog (their events are marked by the ingest module). */
export async function removeFromBacklog(q: Queryable, seqs: readonly number[]): Promise<void> {
  if (seqs.length === 0) return;
  await q.query('DELETE FROM event_backlog WHERE seq = ANY($1::bigint[])', [seqs]);
}

/** An event's backlog row, from its log row: as the trigger of migrations/0043 writes it. */
const BACKLOG_COLUMNS = `seq, workspace_id, anonymous_id, identity,
  CASE WHEN event_type = 'order' THEN payload->>'order_id' END`;

/** Puts claimed events back on the backlog (deferred by the order guard), in this transaction. */
export async function returnToBacklog(q: Queryable, seqs: readonly number[]): Promise<void> {
  if (seqs.length === 0) return;
  await q.query(
    `INSERT INTO event_backlog (seq, workspace_id, anonymous_id, identity, order_id)
     SELECT ${BACKLOG_COLUMNS} FROM events WHERE seq = ANY($1::bigint[])`,
    [seqs],
  );
}

/** Puts an event back on the backlog (a re-queued dead letter). */
export async function addToBacklog(q: Queryable, seq: number): Promise<void> {
  await q.query(
    `INSERT INTO event_backlog (seq, workspace_id, anonymous_id, identity, order_id)
     SELECT ${BACKLOG_COLUMNS} FROM events WHERE seq = $1
     ON CONFLICT DO NOTHING`,
    [seq],
  );
}

/**
 * Removes dead rows of the backlog and their index entries. Without it every claim walks the index
 * entries of all the events processed since the last vacuum (no autovacuum on PGlite, and often off
 * or late on servers). Cannot run inside a transaction. SKIP_LOCKED: when another process is already
 * vacuuming (or analyzing) the backlog, this one does not queue behind it (its loop waits for the
 * VACUUM): one pass serves every worker. Four worker processes spent half their backends' samples
 * waiting on this lock (docs/benchmarks.md, "Worker processes on a quiet machine").
 */
export async function vacuumBacklog(q: Queryable): Promise<void> {
  await q.query('VACUUM (SKIP_LOCKED) event_backlog');
}

/** How many events wait (benchmarks, tests, /health detail). */
export async function countBacklog(q: Queryable): Promise<number> {
  const { rows } = await q.query<{ n: number }>('SELECT count(*)::int AS n FROM event_backlog');
  return rows[0]!.n;
}

export interface DeadLetterWrite {
  id: string;
  workspace_id: string;
  event_seq: number;
  reason: string;
  attempts: number;
}

/** A dead letter for an event (the reason cut to 1,000 characters). */
export const deadLetter = (
  workspaceId: string,
  seq: number,
  reason: string,
  attempts = 1,
): DeadLetterWrite => ({
  id: newSortableId('dlq'),
  workspace_id: workspaceId,
  event_seq: seq,
  reason: reason.slice(0, 1000),
  attempts,
});

export async function insertDeadLetters(q: Queryable, rows: readonly DeadLetterWrite[]): Promise<void> {
  if (rows.length === 0) return;
  await q.query(
    `INSERT INTO dead_letters (id, workspace_id, event_seq, reason, attempts)
     SELECT id, workspace_id, event_seq, reason, attempts
       FROM jsonb_to_recordset($1::jsonb) AS r(id text, workspace_id uuid, event_seq bigint, reason text, attempts int)
     ON CONFLICT (event_seq) DO UPDATE SET reason = EXCLUDED.reason, attempts = EXCLUDED.attempts,
       created_at = now()`,
    [JSON.stringify(rows)],
  );
}

export interface DeadLetterRow {
  seq: number;
  id: string;
  reason: string;
  attempts: number;
  created_at: Date;
  event: EventRecord;
}

export async function listDeadLetters(
  q: Queryable,
  workspaceId: string,
  afterSeq: number | null,
  limit: number,
): Promise<DeadLetterRow[]> {
  type Row = Omit<EventRecord, 'seq'> & {
    dlq_seq: number;
    dlq_id: string;
    reason: string;
    attempts: number;
    failed_at: Date;
    event_seq: number;
  };
  // The dead letter's own columns are renamed: an EventRecord has an id and a seq too.
  const { rows } = await q.query<Row>(
    `SELECT d.seq AS dlq_seq, d.id AS dlq_id, d.reason, d.attempts, d.created_at AS failed_at,
            d.event_seq, ${eventRecordColumns('e').replace('e.seq, ', '')}
       FROM dead_letters d JOIN events e ON e.seq = d.event_seq
      WHERE d.workspace_id = $1 AND ($2::bigint IS NULL OR d.seq > $2::bigint)
      ORDER BY d.seq LIMIT $3`,
    [workspaceId, afterSeq, limit],
  );
  return rows.map(({ dlq_seq, dlq_id, reason, attempts, failed_at, event_seq, ...e }) => ({
    seq: dlq_seq,
    id: dlq_id,
    reason,
    attempts,
    created_at: failed_at,
    event: { ...e, seq: event_seq },
  }));
}

/** Removes a dead letter; the seq of its event, or null when there is no such dead letter. */
export async function deleteDeadLetter(
  q: Queryable,
  workspaceId: string,
  id: string,
): Promise<number | null> {
  const { rows } = await q.query<{ event_seq: number }>(
    'DELETE FROM dead_letters WHERE workspace_id = $1 AND id = $2 RETURNING event_seq',
    [workspaceId, id],
  );
  return rows[0]?.event_seq ?? null;
}

/** Wakes every worker listening (delivered at COMMIT). */
export async function notifyWorkers(q: Queryable, channel: string): Promise<void> {
  await notify(q, channel, '');
}
