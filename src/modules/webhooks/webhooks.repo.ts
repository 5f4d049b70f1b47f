import type { Queryable } from '../../platform/db';

/** SQL of the webhooks module, and nothing else. Tables: webhook_subscriptions, webhook_cursors,
 * webhook_deliveries, webhook_attempts (migrations/0013_webhooks.sql). */

export interface SubscriptionRow {
  id: string;
  seq: number;
  workspace_id: string;
  url: string;
  events: string[];
  secret: string;
  enabled: boolean;
  disabled_reason: string | null;
  created_at: Date;
  updated_at: Date;
}

export async function insertSubscription(
  q: Queryable,
  s: { id: string; workspaceId: string; url: string; events: string[]; secret: string },
): Promise<SubscriptionRow> {
  const { rows } = await q.query<SubscriptionRow>(
    `INSERT INTO webhook_subscriptions (id, workspace_id, url, events, secret)
     VALUES ($1, $2, $3, $4::text[], $5) RETURNING *`,
    [s.id, s.workspaceId, s.url, s.events, s.secret],
  );
  return rows[0]!;
}

export async function countSubscriptions(q: Queryable, workspaceId: string): Promise<number> {
  const { rows } = await q.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM webhook_subscriptions WHERE workspace_id = $1',
    [workspaceId],
  );
  return rows[0]!.n;
}

export async function getSubscription(
  q: Queryable,
  workspaceId: string,
  id: string,
): Promise<SubscriptionRow | null> {
  const { rows } = await q.query<SubscriptionRow>(
    'SELECT * FROM webhook_subscriptions WHERE workspace_id = $1 AND id = $2',
    [workspaceId, id],
  );
  return rows[0] ?? null;
}

export async function listSubscriptions(
  q: Queryable,
  workspaceId: string,
  afterSeq: number,
  limit: number,
): Promise<SubscriptionRow[]> {
  const { rows } = await q.query<SubscriptionRow>(
    `SELECT * FROM webhook_subscriptions WHERE workspace_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
    [workspaceId, afterSeq, limit],
  );
  return rows;
}

export async function updateSubscription(
  q: Queryable,
  workspaceId: string,
  id: string,
  p: {
    url?: string | undefined;
    events?: string[] | undefined;
    secret?: string | undefined;
    enabled?: boolean | undefined;
  },
): Promise<SubscriptionRow | null> {
  // A re-enable clears the reason of an earlier disable (e.g. a 410).
  const { rows } = await q.query<SubscriptionRow>(
    `UPDATE webhook_subscriptions SET url = coalesce($3, url), events = coalesce($4::text[], events),
       secret = coalesce($5, secret), enabled = coalesce($6, enabled),
       disabled_reason = CASE WHEN coalesce($6, enabled) THEN NULL ELSE coalesce(disabled_reason, 'disabled by an admin') END,
       updated_at = now()
     WHERE workspace_id = $1 AND id = $2 RETURNING *`,
    [workspaceId, id, p.url ?? null, p.events ?? null, p.secret ?? null, p.enabled ?? null],
  );
  return rows[0] ?? null;
}

export async function deleteSubscription(q: Queryable, workspaceId: string, id: string): Promise<boolean> {
  const { rowCount } = await q.query(
    'DELETE FROM webhook_subscriptions WHERE workspace_id = $1 AND id = $2',
    [workspaceId, id],
  );
  return rowCount > 0;
}

export async function disableSubscription(q: Queryable, id: string, reason: string): Promise<void> {
  await q.query(
    `UPDATE webhook_subscriptions SET enabled = false, disabled_reason = $2, updated_at = now() WHERE id = $1`,
    [id, reason],
  );
}

/** Workspaces with an enabled subscription: the only ones whose outbox the fan-out reads. */
export async function workspacesWithSubscriptions(q: Queryable): Promise<string[]> {
  const { rows } = await q.query<{ workspace_id: string }>(
    'SELECT DISTINCT workspace_id FROM webhook_subscriptions WHERE enabled',
  );
  return rows.map((r) => r.workspace_id);
}

export async function enabledSubscriptions(q: Queryable, workspaceId: string): Promise<SubscriptionRow[]> {
  const { rows } = await q.query<SubscriptionRow>(
    'SELECT * FROM webhook_subscriptions WHERE workspace_id = $1 AND enabled ORDER BY seq',
    [workspaceId],
  );
  return rows;
}

/** The fan-out position of a workspace, locked for this transaction so two processes never fan out
 * the same facts. */
export async function lockCursor(q: Queryable, workspaceId: string): Promise<number> {
  await q.query(
    'INSERT INTO webhook_cursors (workspace_id) VALUES ($1) ON CONFLICT (workspace_id) DO NOTHING',
    [workspaceId],
  );
  const { rows } = await q.query<{ last_seq: number }>(
    'SELECT last_seq FROM webhook_cursors WHERE workspace_id = $1 FOR UPDATE',
    [workspaceId],
  );
  return rows[0]!.last_seq;
}

/** The database's clock (the one outbox created_at was written with). */
export async function dbNow(q: Queryable): Promise<Date> {
  const { rows } = await q.query<{ now: Date }>('SELECT now() AS now');
  return rows[0]!.now;
}

export async function advanceCursor(q: Queryable, workspaceId: string, lastSeq: number): Promise<void> {
  await q.query('UPDATE webhook_cursors SET last_seq = $2 WHERE workspace_id = $1', [workspaceId, lastSeq]);
}
