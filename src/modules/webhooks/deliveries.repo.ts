import type { Queryable } from '../../platform/db';

/** SQL of deliveries and their attempts (webhook_deliveries, webhook_attempts). */

/**
 * `erased`: the profile the fact was about was erased; the body is scrubbed and the delivery is
 * never sent again. `cancelled`: stopped before it went out (the profile withdrew its consent).
 */
export type DeliveryStatus = 'pending' | 'delivered' | 'failed' | 'dead' | 'erased' | 'cancelled';

/** States after which a delivery is never attempted again, not even by a manual re-send. */
export const FINAL_STATUSES: ReadonlySet<DeliveryStatus> = new Set(['erased', 'cancelled']);

export interface DeliveryRow {
  id: string;
  seq: number;
  workspace_id: string;
  subscription_id: string;
  event_id: string;
  event_type: string;
  body: Record<string, unknown>;
  status: DeliveryStatus;
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  last_attempt_at: Date | null;
  next_attempt_at: Date | null;
  created_at: Date;
  /** The profile the fact is about: deliveries of one subscription and key go out in order. */
  order_key: string | null;
}

export interface NewDelivery {
  id: string;
  workspace_id: string;
  subscription_id: string;
  event_id: string;
  event_type: string;
  body: Record<string, unknown>;
  order_key: string | null;
}

/** Inserts deliveries; one already recorded for its (subscription, fact) is skipped. Returns the new ids. */
export async function insertDeliveries(q: Queryable, rows: readonly NewDelivery[]): Promise<string[]> {
  if (rows.length === 0) return [];
  const { rows: out } = await q.query<{ id: string }>(
    `INSERT INTO webhook_deliveries (id, workspace_id, subscription_id, event_id, event_type, body, order_key,
       next_attempt_at)
     SELECT id, workspace_id, subscription_id, event_id, event_type, body, order_key, now()
       FROM ROWS FROM (jsonb_to_recordset($1::jsonb) AS (id text, workspace_id uuid, subscription_id text,
            event_id text, event_type text, body jsonb, order_key text)) WITH ORDINALITY AS r(id, workspace_id,
            subscription_id, event_id, event_type, body, order_key, n)
      ORDER BY n
     ON CONFLICT (subscription_id, event_id) DO NOTHING RETURNING id`,
    [JSON.stringify(rows)],
  );
  return out.map((r) => r.id);
}

export async function getDelivery(q: Queryable, id: string): Promise<DeliveryRow | null> {
  const { rows } = await q.query<DeliveryRow>('SELECT * FROM webhook_deliveries WHERE id = $1', [id]);
  return rows[0] ?? null;
}

export async function getDeliveryOf(
  q: Queryable,
  workspaceId: string,
  subscriptionId: string,
  id: string,
): Promise<DeliveryRow | null> {
  const { rows } = await q.query<DeliveryRow>(
    'SELECT * FROM webhook_deliveries WHERE workspace_id = $1 AND subscription_id = $2 AND id = $3',
    [workspaceId, subscriptionId, id],
  );
  return rows[0] ?? null;
}

/** Newest first: what an admin looking at a failing endpoint wants to see. */
export async function listDeliveries(
  q: Queryable,
  subscriptionId: string,
  beforeSeq: number | null,
  limit: number,
): Promise<DeliveryRow[]> {
  const { rows } = await q.query<DeliveryRow>(
    `SELECT * FROM webhook_deliveries WHERE subscription_id = $1 AND ($2::bigint IS NULL OR seq < $2)
     ORDER BY seq DESC LIMIT $3`,
    [subscriptionId, beforeSeq, limit],
  );
  return rows;
}

export interface AttemptResult {
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  status: DeliveryStatus;
  /** null when no further automatic attempt is planned. */
  nextAttemptInMs: number | null;
  /** The `X-Request-Id` the attempt sent. */
  requestId: string;
}

/**
 * Takes attempt `n` of a pending delivery for `leaseMs`: false if it was made already, or another
 * job is making it now (its lease has not run out). Recording the attempt ends the lease.
 */
export async function takeAttempt(q: Queryable, id: string, n: number, leaseMs: number): Promise<boolean> {
  const { rowCount } = await q.query(
    `UPDATE webhook_deliveries SET attempt_until = now() + make_interval(secs => $3::float8 / 1000)
     WHERE id = $1 AND status = 'pending' AND attempts = $2 - 1 AND (attempt_until IS NULL OR attempt_until < now())`,
    [id, n, leaseMs],
  );
  return rowCount > 0;
}

/** The earliest delivery still pending before this one for the same subscription and profile, if any. */
export async function pendingBefore(q: Queryable, d: DeliveryRow): Promise<string | null> {
  if (d.order_key === null) return null;
  const { rows } = await q.query<{ id: string }>(
    `SELECT id FROM webhook_deliveries WHERE subscription_id = $1 AND order_key = $2 AND seq < $3
       AND status = 'pending' AND order_key IS NOT NULL ORDER BY seq LIMIT 1`,
    [d.subscription_id, d.order_key, d.seq],
  );
  return rows[0]?.id ?? null;
}

/** The next delivery pending after this one for the same subscription and profile (it waits on this one). */
export async function pendingAfter(q: Queryable, d: DeliveryRow): Promise<DeliveryRow | null> {
  if (d.order_key === null) return null;
  const { rows } = await q.query<DeliveryRow>(
    `SELECT * FROM webhook_deliveries WHERE subscription_id = $1 AND order_key = $2 AND seq > $3
       AND status = 'pending' AND order_key IS NOT NULL ORDER BY seq LIMIT 1`,
    [d.subscription_id, d.order_key, d.seq],
  );
  return rows[0] ?? null;
}

/**
 * Records attempt number `n` and the delivery's new state, in one transaction with the next job.
 * False when the delivery was erased or cancelled while the attempt was under way: its state stays
 * so, and no further attempt may be planned.
 */
export async function recordAttempt(q: Queryable, id: string, n: number, r: AttemptResult): Promise<boolean> {
  await q.query(
    `INSERT INTO webhook_attempts (delivery_id, n, status_code, error, duration_ms, request_id)
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (delivery_id, n) DO NOTHING`,
    [id, n, r.statusCode, r.error, r.durationMs, r.requestId],
  );
  const { rowCount } = await q.query(
    `UPDATE webhook_deliveries SET attempts = $2, status = $3, last_status_code = $4, last_error = $5,
       last_attempt_at = now(), attempt_until = NULL,
       next_attempt_at = CASE WHEN $6::float8 IS NULL THEN NULL ELSE now() + make_interval(secs => $6::float8 / 1000) END
     WHERE id = $1 AND status NOT IN ('erased', 'cancelled')`,
    [id, n, r.status, r.statusCode, r.error, r.nextAttemptInMs],
  );
  // Erased or cancelled meanwhile: the state stays, but the lease is given back at once, so a
  // withdrawal waiting for the attempts under way (attemptsUnderWay) sees this one end.
  if (rowCount === 0) await q.query('UPDATE webhook_deliveries SET attempt_until = NULL WHERE id = $1', [id]);
  return rowCount > 0;
}

/**
 * Erasure: at most `limit` deliveries of facts about these profiles become `erased`, their bodies
 * scrubbed (`{}`), whatever their state: a pending one is never sent, a delivered one can never be
 * sent again. The attempts stay (status codes and durations, no body). Answers how many changed.
 */
export async function eraseDeliveriesAbout(
  q: Queryable,
  workspaceId: string,
  profileIds: readonly string[],
  limit: number | null = null,
): Promise<number> {
  if (profileIds.length === 0) return 0;
  const { rowCount } = await q.query(
    `UPDATE webhook_deliveries SET status = 'erased', body = '{}'::jsonb, next_attempt_at = NULL,
       attempt_until = NULL, last_error = NULL
     WHERE id IN (SELECT id FROM webhook_deliveries
                   WHERE workspace_id = $1 AND order_key = ANY($2::text[]) AND status <> 'erased' LIMIT $3)`,
    [workspaceId, profileIds, limit],
  );
  return rowCount;
}

/**
 * Retention: deletes at most `limit` settled deliveries of the workspace (delivered, failed, dead,
 * erased or cancelled: never a pending one) created before `before`, oldest first, with their
 * attempts (the foreign key cascades); answers how many went. The status is tested again on the row
 * being deleted, so one a re-send put back in line meanwhile stays.
 */
export async function deleteSettledDeliveries(
  q: Queryable,
  workspaceId: string,
  before: Date,
  limit: number,
): Promise<number> {
  const { rowCount } = await q.query(
    `DELETE FROM webhook_deliveries WHERE status <> 'pending' AND id = ANY(ARRAY(
       SELECT id FROM webhook_deliveries WHERE workspace_id = $1 AND created_at < $2 AND status <> 'pending'
        ORDER BY created_at LIMIT $3))`,
    [workspaceId, before, limit],
  );
  return rowCount;
}

/** The deliveries of facts about these profiles, oldest first, a page at a time (the access export). */
export async function deliveriesAbout(
  q: Queryable,
  workspaceId: string,
  profileIds: readonly string[],
  afterSeq: number,
  limit: number,
): Promise<DeliveryRow[]> {
  const { rows } = await q.query<DeliveryRow>(
    `SELECT * FROM webhook_deliveries WHERE workspace_id = $1 AND order_key = ANY($2::text[]) AND seq > $3
      ORDER BY seq LIMIT $4`,
    [workspaceId, profileIds, afterSeq, limit],
  );
  return rows.map((r) => ({ ...r, seq: Number(r.seq) }));
}

/** Puts a delivery back in line for a manual re-send. */
export async function markPending(q: Queryable, id: string): Promise<void> {
  await q.query(`UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = now() WHERE id = $1`, [
    id,
  ]);
}

export async function markFailed(q: Queryable, id: string, error: string): Promise<void> {
  await q.query(
    `UPDATE webhook_deliveries SET status = 'failed', last_error = $2, next_attempt_at = NULL, attempt_until = NULL
     WHERE id = $1`,
    [id, error],
  );
}

export interface AttemptRow {
  n: number;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
  attempted_at: Date;
  request_id: string | null;
}

export async function listAttempts(q: Queryable, deliveryId: string): Promise<AttemptRow[]> {
  const { rows } = await q.query<AttemptRow>(
    `SELECT n, status_code, error, duration_ms, attempted_at, request_id FROM webhook_attempts
      WHERE delivery_id = $1 ORDER BY n`,
    [deliveryId],
  );
  return rows;
}

/**
 * A consent withdrawal: the pending deliveries of facts about these profiles to these subscriptions
 * become `cancelled`, never to be sent. Answers the ids of those whose attempt is under way right
 * now (leased by takeAttempt): the caller waits for them to end (inFlight).
 */
export async function cancelPendingAbout(
  q: Queryable,
  workspaceId: string,
  subscriptionIds: readonly string[],
  profileIds: readonly string[],
): Promise<{ cancelled: number; inFlight: string[] }> {
  if (subscriptionIds.length === 0 || profileIds.length === 0) return { cancelled: 0, inFlight: [] };
  const { rows } = await q.query<{ id: string; busy: boolean }>(
    `UPDATE webhook_deliveries SET status = 'cancelled', next_attempt_at = NULL,
       last_error = 'consent withdrawn before it was sent'
     WHERE workspace_id = $1 AND subscription_id = ANY($2::text[]) AND order_key = ANY($3::text[])
       AND status = 'pending'
     RETURNING id, coalesce(attempt_until > now(), false) AS busy`,
    [workspaceId, subscriptionIds, profileIds],
  );
  return { cancelled: rows.length, inFlight: rows.filter((r) => r.busy).map((r) => r.id) };
}

/** Of these deliveries, those whose attempt is still under way (its lease not yet given back). */
export async function attemptsUnderWay(q: Queryable, ids: readonly string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const { rows } = await q.query<{ id: string }>(
    'SELECT id FROM webhook_deliveries WHERE id = ANY($1::text[]) AND attempt_until > now()',
    [ids],
  );
  return rows.map((r) => r.id);
}
