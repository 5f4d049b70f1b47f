import type { Queryable } from '../../platform/db';

export interface ClaimedEvent {
  seq: number;
  id: string;
  workspace_id: string;
  event_type: string;
  event_name: string;
  anonymous_id: string | null;
  identity: string | null;
  payload: Record<string, unknown>;
  occurred_at: Date;
  api_key_id: string | null;
}

/**
 * Makes the next statements walk the backlog index in seq order. With a backlog that grew faster
 * than the statistics (a burst, a bulk load) the planner otherwise estimates a few hundred waiting
 * rows and picks a bitmap scan that reads and sorts the whole backlog to return the first 1000 (65 ms
 * instead of 5 ms at a 50,000-event backlog, measured); the bitmap scan also never marks dead index
 * entries, so the index walk would keep growing until the next vacuum. Transaction-local.
 */
export async function preferIndexOrder(q: Queryable, on: boolean): Promise<void> {
  const v = on ? 'off' : 'on';
  await q.query(
    `SELECT set_config('enable_bitmapscan', $1, true), set_config('enable_sort', $1, true),
            set_config('enable_seqscan', $1, true)`,
    [v],
  );
}

/**
 * Claims the oldest unprocessed events that no other worker holds. The row locks last until the
 * claiming transaction ends, which is also where the events are marked processed: exactly once.
 */
export async function claimEvents(q: Queryable, limit: number): Promise<ClaimedEvent[]> {
  const { rows } = await q.query<ClaimedEvent>(
    `SELECT seq, id, workspace_id, event_type, event_name, anonymous_id, identity, payload, occurred_at, api_key_id
       FROM events WHERE processed_at IS NULL
      ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED`,
    [limit],
  );
  return rows;
}

/** Claims one given event if it is still unprocessed and free (dead-lettering it). */
export async function claimEvent(q: Queryable, seq: number): Promise<ClaimedEvent | null> {
  const { rows } = await q.query<ClaimedEvent>(
    `SELECT seq, id, workspace_id, event_type, event_name, anonymous_id, identity, payload, occurred_at, api_key_id
       FROM events WHERE seq = $1 AND processed_at IS NULL FOR UPDATE SKIP LOCKED`,
    [seq],
  );
  return rows[0] ?? null;
}

export interface PendingEvent {
  seq: number;
  workspace_id: string;
  anonymous_id: string | null;
  identity: string | null;
}

/**
 * Unprocessed events older than `beforeSeq` that are not in this batch: held by another worker right
 * now (or just released by one). An event of this batch sharing an identifier or a profile with one
 * of them must wait, so that one profile's events are applied in order.
 */
export async function findPendingBefore(
  q: Queryable,
  beforeSeq: number,
  mine: readonly number[],
  limit: number,
): Promise<PendingEvent[]> {
  const { rows } = await q.query<PendingEvent>(
    `SELECT seq, workspace_id, anonymous_id, identity FROM events
      WHERE processed_at IS NULL AND seq < $1 AND seq <> ALL($2::bigint[])
      ORDER BY seq LIMIT $3`,
    [beforeSeq, mine, limit],
  );
  return rows;
}

export async function markProcessed(
  q: Queryable,
  rows: ReadonlyArray<{ seq: number; profile_id: string | null }>,
): Promise<void> {
  if (rows.length === 0) return;
  await q.query(
    `UPDATE events e SET processed_at = now(), profile_id = u.profile_id
       FROM jsonb_to_recordset($1::jsonb) AS u(seq bigint, profile_id uuid)
      WHERE e.seq = u.seq`,
    [JSON.stringify(rows)],
  );
}

/** Events of erased-and-suppressed people are not kept: they would only re-identify them. */
export async function deleteEvents(q: Queryable, seqs: readonly number[]): Promise<void> {
  if (seqs.length === 0) return;
  await q.query('DELETE FROM events WHERE seq = ANY($1::bigint[])', [seqs]);
}

export async function insertDeadLetters(
  q: Queryable,
  rows: ReadonlyArray<{
    id: string;
    workspace_id: string;
    event_seq: number;
    reason: string;
    attempts: number;
  }>,
): Promise<void> {
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

export async function loadWorkspaceSettings(
  q: Queryable,
  ids: readonly string[],
): Promise<Array<{ id: string; settings: Record<string, unknown> }>> {
  if (ids.length === 0) return [];
  const { rows } = await q.query<{ id: string; settings: Record<string, unknown> }>(
    'SELECT id, settings FROM workspaces WHERE id = ANY($1::uuid[])',
    [ids],
  );
  return rows;
}

export interface DeadLetterRow {
  seq: number;
  id: string;
  reason: string;
  attempts: number;
  created_at: Date;
  event_id: string;
  event_type: string;
  event_name: string;
  anonymous_id: string | null;
  identity: string | null;
  payload: Record<string, unknown>;
  occurred_at: Date;
  received_at: Date;
}

export async function listDeadLetters(
  q: Queryable,
  workspaceId: string,
  afterSeq: number | null,
  limit: number,
): Promise<DeadLetterRow[]> {
  const { rows } = await q.query<DeadLetterRow>(
    `SELECT d.seq, d.id, d.reason, d.attempts, d.created_at, e.id AS event_id, e.event_type, e.event_name,
            e.anonymous_id, e.identity, e.payload, e.occurred_at, e.received_at
       FROM dead_letters d JOIN events e ON e.seq = d.event_seq
      WHERE d.workspace_id = $1 AND ($2::bigint IS NULL OR d.seq > $2::bigint)
      ORDER BY d.seq LIMIT $3`,
    [workspaceId, afterSeq, limit],
  );
  return rows;
}

/** Puts a dead-lettered event back in the stream; false when there is no such dead letter. */
export async function requeueDeadLetter(
  q: Queryable,
  workspaceId: string,
  id: string,
): Promise<string | null> {
  const { rows } = await q.query<{ event_seq: number }>(
    'DELETE FROM dead_letters WHERE workspace_id = $1 AND id = $2 RETURNING event_seq',
    [workspaceId, id],
  );
  const seq = rows[0]?.event_seq;
  if (seq === undefined) return null;
  const ev = await q.query<{ id: string }>(
    'UPDATE events SET processed_at = NULL, profile_id = NULL WHERE seq = $1 RETURNING id',
    [seq],
  );
  return ev.rows[0]?.id ?? null;
}

/** Wakes every worker listening (delivered at COMMIT). */
export async function notifyWorkers(q: Queryable, channel: string): Promise<void> {
  await q.query('SELECT pg_notify($1, $2)', [channel, '']);
}
