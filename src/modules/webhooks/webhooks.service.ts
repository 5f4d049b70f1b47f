import type { CursorCodec, PageRequest } from '../../platform/cursor';
import { toPage } from '../../platform/cursor';
import type { Db } from '../../platform/db';
import { AppError, notFound } from '../../platform/errors';
import { rateLimited } from '../../platform/http/auth-hook';
import { iso } from '../../platform/http/envelope';
import type { RateLimits } from '../../platform/http/rate-limit';
import { REQUEST_ID_HEADER } from '../../platform/http/request-id';
import { newSortableId } from '../../platform/ids';
import { getSegment } from '../segments';
import { startCursorAtEnd } from './cursor.repo';
import { MAX_SUBSCRIPTIONS, webhookPolicy } from './policy';
import { send } from './send';
import { deliveryHeaders, isUsableSecret, newSecret } from './signing';
import { checkDestination } from './url-guard';
import * as repo from './webhooks.repo';
import { DEFAULT_GRACE_SECONDS } from './webhooks.schemas';

export interface WebhookInput {
  url: string;
  events: string[];
  secret?: string | undefined;
  segments?: string[] | undefined;
  consent_categories?: string[] | undefined;
}

export interface WebhookPatch {
  url?: string | undefined;
  events?: string[] | undefined;
  secret?: string | undefined;
  enabled?: boolean | undefined;
  segments?: string[] | undefined;
  consent_categories?: string[] | undefined;
}

export interface RotateInput {
  secret?: string | undefined;
  grace_seconds?: number | undefined;
}

/** Test sends per subscription per minute (each makes an outbound request the caller waits for). */
export const TEST_SENDS_PER_MINUTE = 10;

/** The end of a grace period still running, else null (an expired one may linger in the row). */
const graceEnd = (r: repo.SubscriptionRow): string | null =>
  r.previous_secret !== null &&
  r.previous_secret_expires_at !== null &&
  new Date(r.previous_secret_expires_at).getTime() > Date.now()
    ? iso(r.previous_secret_expires_at)
    : null;

const present = (r: repo.SubscriptionRow) => ({
  id: r.id,
  url: r.url,
  events: r.events,
  secret: r.secret,
  previous_secret_expires_at: graceEnd(r),
  segments: r.segments,
  consent_categories: r.consent_categories,
  enabled: r.enabled,
  disabled_reason: r.disabled_reason,
  created_at: iso(r.created_at)!,
  updated_at: iso(r.updated_at)!,
});

function checkSecret(secret: string | undefined): void {
  if (secret !== undefined && !isUsableSecret(secret)) {
    const message = 'a whsec_ secret must be base64 of at least 16 bytes after the prefix';
    throw new AppError('VALIDATION_ERROR', message, { details: [{ path: '/secret', message }] });
  }
}

/**
 * Every id of a segment filter must be a segment of the workspace: an unknown one (or another
 * workspace's) is 404 NOT_FOUND naming its position, as an unknown id in a body is elsewhere.
 */
async function checkSegments(db: Db, workspaceId: string, ids: readonly string[] | undefined): Promise<void> {
  for (const [i, id] of (ids ?? []).entries()) {
    try {
      await getSegment(db, workspaceId, id);
    } catch (err) {
      if (!(err instanceof AppError) || err.code !== 'NOT_FOUND') throw err;
      throw new AppError('NOT_FOUND', `segment ${id} not found`, {
        details: [{ path: `/segments/${i}`, message: 'segment not found' }],
      });
    }
  }
}

export async function createWebhook(db: Db, workspaceId: string, input: WebhookInput, allowPrivate: boolean) {
  checkSecret(input.secret);
  await checkDestination(input.url, allowPrivate);
  await checkSegments(db, workspaceId, input.segments);
  if ((await repo.countSubscriptions(db, workspaceId)) >= MAX_SUBSCRIPTIONS) {
    throw new AppError('CONFLICT', `a workspace has at most ${MAX_SUBSCRIPTIONS} webhook subscriptions`);
  }
  const row = await db.transaction(async (tx) => {
    // A workspace's first (enabled) subscription starts at the outbox's end: the facts before it were
    // owed to no receiver, and reading them all first would hold up its first delivery (and, in a
    // workspace with years of history, the fan-out) for nothing.
    const first = !(await repo.hasEnabledSubscription(tx, workspaceId));
    const created = await repo.insertSubscription(tx, {
      id: newSortableId('whk'),
      workspaceId,
      url: input.url,
      events: input.events,
      secret: input.secret ?? newSecret(),
      segments: input.segments ?? [],
      consentCategories: input.consent_categories ?? [],
    });
    if (first) await startCursorAtEnd(tx, workspaceId);
    return created;
  });
  return present(row);
}

export async function getWebhook(db: Db, workspaceId: string, id: string) {
  const row = await repo.getSubscription(db, workspaceId, id);
  if (!row) throw notFound('webhook');
  return present(row);
}

export async function listWebhooks(db: Db, codec: CursorCodec, workspaceId: string, page: PageRequest) {
  const after = (page.after?.[0] as number | undefined) ?? 0;
  const rows = await repo.listSubscriptions(db, workspaceId, after, page.limit + 1);
  return toPage(codec, page, rows, (r) => [r.seq], present);
}

export async function updateWebhook(
  db: Db,
  workspaceId: string,
  id: string,
  patch: WebhookPatch,
  allowPrivate: boolean,
) {
  checkSecret(patch.secret);
  if (patch.url !== undefined) await checkDestination(patch.url, allowPrivate);
  // A foreign or unknown subscription is 404 before its segment list is judged.
  if (patch.segments !== undefined && patch.segments.length > 0) {
    await getWebhook(db, workspaceId, id);
    await checkSegments(db, workspaceId, patch.segments);
  }
  const row = await repo.updateSubscription(db, workspaceId, id, patch);
  if (!row) throw notFound('webhook');
  return present(row);
}

/**
 * Replaces the secret (the given one, or a new `whsec_` one). The replaced secret keeps signing
 * deliveries beside the new one for `grace_seconds` (default 24 h), so receivers can switch without
 * losing any; a rotation during a grace period drops the secret before the replaced one.
 */
export async function rotateSecret(db: Db, workspaceId: string, id: string, input: RotateInput) {
  checkSecret(input.secret);
  const grace = input.grace_seconds ?? DEFAULT_GRACE_SECONDS;
  const row = await repo.rotateSecret(db, workspaceId, id, input.secret ?? newSecret(), grace);
  if (!row) throw notFound('webhook');
  return present(row);
}

export interface TestSendResult {
  delivered: boolean;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
}

/**
 * Sends one synthetic `webhook.test` event to the subscription now, signed like a real delivery
 * (every active secret) and through the same send() (SSRF guard at connect, timeout), and reports
 * what the receiver answered. Enabled or not. Not a delivery: nothing is stored, nothing retried;
 * a receiver that fails or hangs is `delivered: false`, never an error of this request.
 */
export async function testSend(
  db: Db,
  limits: RateLimits,
  workspaceId: string,
  id: string,
  opts: { allowPrivate: boolean; signal: AbortSignal; requestId: string },
): Promise<TestSendResult> {
  const sub = await repo.getSubscription(db, workspaceId, id);
  if (!sub) throw notFound('webhook');
  // Each call makes the service open a connection somewhere and wait up to the timeout for it.
  const d = await limits.consume(`webhook-test:${sub.id}`, 'standard', 1, TEST_SENDS_PER_MINUTE);
  if (!d.allowed) throw rateLimited(d.resetSeconds);
  const now = new Date();
  const body = JSON.stringify({
    id: newSortableId('evt'),
    type: 'webhook.test',
    created_at: now.toISOString(),
    workspace_id: workspaceId,
    data: {
      subscription_id: sub.id,
      message: 'A test delivery requested through the API; nothing happened in the workspace.',
    },
  });
  const deliveryId = newSortableId('dlv');
  const headers = {
    ...deliveryHeaders(sub, deliveryId, 'webhook.test', body, Math.floor(now.getTime() / 1000)),
    [REQUEST_ID_HEADER]: opts.requestId,
  };
  try {
    const r = await send(sub.url, body, headers, {
      timeoutMs: webhookPolicy.timeoutMs,
      allowPrivate: opts.allowPrivate,
      signal: opts.signal,
    });
    const delivered = r.statusCode !== null && r.statusCode >= 200 && r.statusCode < 300;
    return {
      delivered,
      status_code: r.statusCode,
      error: r.error ?? (delivered ? null : `HTTP ${r.statusCode}`),
      duration_ms: r.durationMs,
    };
  } catch (err) {
    // send() reports transport failures itself; anything else (a URL it cannot use) is still the
    // receiver's side of the test, not a failure of this request.
    const error = err instanceof Error ? err.message : String(err);
    return { delivered: false, status_code: null, error: error.slice(0, 500), duration_ms: 0 };
  }
}

export async function deleteWebhook(db: Db, workspaceId: string, id: string) {
  if (!(await repo.deleteSubscription(db, workspaceId, id))) throw notFound('webhook');
  return { id, deleted: true as const };
}
