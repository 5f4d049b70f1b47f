import type { Queryable } from '../../platform/db';

/** SQL of the webhooks module, and nothing else. Tables: webhook_subscriptions, webhook_cursors,
 * webhook_deliveries, webhook_attempts (migrations/0013_webhooks.sql, 0015_webhook_rotation_filters.sql). */

export interface SubscriptionRow {
  id: string;
  seq: number;
  workspace_id: string;
  url: string;
  events: string[];
  secret: string;
  /** The secret a rotation replaced; it signs deliveries too until previous_secret_expires_at. */
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  /** Segment ids whose segment.entered / segment.exited facts are wanted; empty: all. */
  segments: string[];
  /** Consent categories a profile must have granted for its facts to be delivered; empty: none. */
  consent_categories: string[];
  enabled: boolean;
  disabled_reason: string | null;
  created_at: Date;
  updated_at: Date;
}

export async function insertSubscription(
  q: Queryable,
  s: {
    id: string;
    workspaceId: string;
    url: string;
    events: string[];
    secret: string;
    segments: string[];
    consentCategories: string[];
  },
): Promise<SubscriptionRow> {
  const { rows } = await q.query<SubscriptionRow>(
    `INSERT INTO webhook_subscriptions (id, workspace_id, url, events, secret, segments, consent_categories)
     VALUES ($1, $2, $3, $4::text[], $5, $6::text[], $7::text[]) RETURNING *`,
    [s.id, s.workspaceId, s.url, s.events, s.secret, s.segments, s.consentCategories],
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
    segments?: string[] | undefined;
    consent_categories?: string[] | undefined;
  },
): Promise<SubscriptionRow | null> {
  // A re-enable clears the reason of an earlier disable (e.g. a 410). A secret set this way replaces
  // the current one at once: it also ends a rotation's grace period (rotateSecret keeps one).
  const { rows } = await q.query<SubscriptionRow>(
    `UPDATE webhook_subscriptions SET url = coalesce($3, url), events = coalesce($4::text[], events),
       secret = coalesce($5, secret), enabled = coalesce($6, enabled),
       disabled_reason = CASE WHEN coalesce($6, enabled) THEN NULL ELSE coalesce(disabled_reason, 'disabled by an admin') END,
       previous_secret = CASE WHEN $5::text IS NULL THEN previous_secret END,
       previous_secret_expires_at = CASE WHEN $5::text IS NULL THEN previous_secret_expires_at END,
       segments = coalesce($7::text[], segments),
       consent_categories = coalesce($8::text[], consent_categories),
       updated_at = now()
     WHERE workspace_id = $1 AND id = $2 RETURNING *`,
    [
      workspaceId,
      id,
      p.url ?? null,
      p.events ?? null,
      p.secret ?? null,
      p.enabled ?? null,
      p.segments ?? null,
      p.consent_categories ?? null,
    ],
  );
  return rows[0] ?? null;
}

/**
 * Makes `secret` the current secret. With a grace period the replaced one becomes the previous
 * secret until now + graceSeconds (a previous secret of an earlier rotation is dropped: only the two
 * latest are ever valid); with none, it is invalid at once. The right-hand sides read the row as it
 * was, so `previous_secret = secret` takes the secret being replaced.
 */
export async function rotateSecret(
  q: Queryable,
  workspaceId: string,
  id: string,
  secret: string,
  graceSeconds: number,
): Promise<SubscriptionRow | null> {
  const { rows } = await q.query<SubscriptionRow>(
    `UPDATE webhook_subscriptions SET secret = $3,
       previous_secret = CASE WHEN $4::int > 0 THEN secret END,
       previous_secret_expires_at = CASE WHEN $4::int > 0 THEN now() + make_interval(secs => $4::int) END,
       updated_at = now()
     WHERE workspace_id = $1 AND id = $2 RETURNING *`,
    [workspaceId, id, secret, graceSeconds],
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

/** Whether the workspace has an enabled subscription (asked at every commit that wrote facts: one index probe). */
export async function hasEnabledSubscription(q: Queryable, workspaceId: string): Promise<boolean> {
  const { rows } = await q.query(
    'SELECT 1 FROM webhook_subscriptions WHERE workspace_id = $1 AND enabled LIMIT 1',
    [workspaceId],
  );
  return rows.length > 0;
}

export async function enabledSubscriptions(q: Queryable, workspaceId: string): Promise<SubscriptionRow[]> {
  const { rows } = await q.query<SubscriptionRow>(
    'SELECT * FROM webhook_subscriptions WHERE workspace_id = $1 AND enabled ORDER BY seq',
    [workspaceId],
  );
  return rows;
}
