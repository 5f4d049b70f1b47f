import type { CursorCodec, Page, PageRequest } from '../../platform/cursor';
import { toPage } from '../../platform/cursor';
import type { Db } from '../../platform/db';
import { AppError, notFound } from '../../platform/errors';
import { iso } from '../../platform/http/envelope';
import { newSortableId } from '../../platform/ids';
import * as deliveries from './deliveries.repo';
import { enqueueAttempt } from './fanout.job';
import { MAX_SUBSCRIPTIONS } from './policy';
import { isUsableSecret, newSecret } from './signing';
import { checkDestination } from './url-guard';
import * as repo from './webhooks.repo';

export interface WebhookInput {
  url: string;
  events: string[];
  secret?: string | undefined;
}

export interface WebhookPatch {
  url?: string | undefined;
  events?: string[] | undefined;
  secret?: string | undefined;
  enabled?: boolean | undefined;
}

const present = (r: repo.SubscriptionRow) => ({
  id: r.id,
  url: r.url,
  events: r.events,
  secret: r.secret,
  enabled: r.enabled,
  disabled_reason: r.disabled_reason,
  created_at: iso(r.created_at)!,
  updated_at: iso(r.updated_at)!,
});

const presentDelivery = (d: deliveries.DeliveryRow) => ({
  id: d.id,
  event_id: d.event_id,
  event_type: d.event_type,
  status: d.status,
  attempts: d.attempts,
  last_status_code: d.last_status_code,
  last_error: d.last_error,
  last_attempt_at: iso(d.last_attempt_at),
  next_attempt_at: d.status === 'pending' ? iso(d.next_attempt_at) : null,
  created_at: iso(d.created_at)!,
});

function checkSecret(secret: string | undefined): void {
  if (secret !== undefined && !isUsableSecret(secret)) {
    const message = 'a whsec_ secret must be base64 of at least 16 bytes after the prefix';
    throw new AppError('VALIDATION_ERROR', message, { details: [{ path: '/secret', message }] });
  }
}

export async function createWebhook(db: Db, workspaceId: string, input: WebhookInput, allowPrivate: boolean) {
  checkSecret(input.secret);
  await checkDestination(input.url, allowPrivate);
  if ((await repo.countSubscriptions(db, workspaceId)) >= MAX_SUBSCRIPTIONS) {
    throw new AppError('CONFLICT', `a workspace has at most ${MAX_SUBSCRIPTIONS} webhook subscriptions`);
  }
  const row = await repo.insertSubscription(db, {
    id: newSortableId('whk'),
    workspaceId,
    url: input.url,
    events: input.events,
    secret: input.secret ?? newSecret(),
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
  const row = await repo.updateSubscription(db, workspaceId, id, patch);
  if (!row) throw notFound('webhook');
  return present(row);
}

export async function deleteWebhook(db: Db, workspaceId: string, id: string) {
  if (!(await repo.deleteSubscription(db, workspaceId, id))) throw notFound('webhook');
  return { id, deleted: true as const };
}

export async function listDeliveries(
  db: Db,
  codec: CursorCodec,
  workspaceId: string,
  id: string,
  page: PageRequest,
): Promise<Page<ReturnType<typeof presentDelivery>>> {
  await getWebhook(db, workspaceId, id);
  const before = (page.after?.[0] as number | undefined) ?? null;
  const rows = await deliveries.listDeliveries(db, id, before, page.limit + 1);
  return toPage(codec, page, rows, (r) => [r.seq], presentDelivery);
}

/**
 * Sends a delivery again now, whatever its state. Keyed apart from the planned retry, so both may be
 * queued; whichever runs first makes the attempt and the other finds it made (deliver.job.ts).
 */
export async function redeliver(db: Db, workspaceId: string, id: string, deliveryId: string) {
  const d = await deliveries.getDeliveryOf(db, workspaceId, id, deliveryId);
  if (!d) throw notFound('delivery');
  await db.transaction(async (tx) => {
    await deliveries.markPending(tx, d.id);
    await enqueueAttempt(tx, workspaceId, d.id, d.attempts + 1, 0, 'r');
  });
  return presentDelivery({ ...d, status: 'pending', next_attempt_at: new Date() });
}

export async function getAttempts(db: Db, workspaceId: string, id: string, deliveryId: string) {
  const d = await deliveries.getDeliveryOf(db, workspaceId, id, deliveryId);
  if (!d) throw notFound('delivery');
  const attempts = await deliveries.listAttempts(db, d.id);
  return attempts.map((a) => ({ ...a, attempted_at: iso(a.attempted_at)! }));
}
