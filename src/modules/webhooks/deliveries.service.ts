import type { CursorCodec, Page, PageRequest } from '../../platform/cursor';
import { toPage } from '../../platform/cursor';
import type { Db } from '../../platform/db';
import { AppError, notFound } from '../../platform/errors';
import { iso } from '../../platform/http/envelope';
import { type ConsentDefaultOf, consentFor, consentPermits } from './consent';
import { lockCursor } from './cursor.repo';
import * as deliveries from './deliveries.repo';
import { enqueueAttempt } from './fanout.job';
import { getSubscription } from './webhooks.repo';
import { getWebhook } from './webhooks.service';

/** A subscription's deliveries through the API: listed, their attempts shown, one sent again. */

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
export async function redeliver(
  db: Db,
  workspaceId: string,
  id: string,
  deliveryId: string,
  consentDefault: ConsentDefaultOf,
  /** The redeliver request's id: the attempt sends it to the receiver and records it. */
  requestId: string,
) {
  const d = await deliveries.getDeliveryOf(db, workspaceId, id, deliveryId);
  if (!d) throw notFound('delivery');
  // Its body was scrubbed when the profile was erased: there is nothing left to send, and never will be.
  if (d.status === 'erased')
    throw new AppError('ERASED', 'this delivery carried data of an erased profile; it cannot be sent again');
  if (d.status === 'cancelled')
    throw new AppError(
      'CONFLICT',
      'this delivery was cancelled (its profile withdrew consent); it cannot be sent',
    );
  await db.transaction(async (tx) => {
    // A subscription that needs consent: decided under the fan-out's lock, which a withdrawal takes
    // too, so a withdrawal committing meanwhile either finds this one pending (and cancels it) or has
    // committed before the check below reads the profile's choices.
    const sub = await getSubscription(tx, workspaceId, id);
    if (sub && sub.consent_categories.length > 0 && d.order_key !== null) {
      await lockCursor(tx, workspaceId);
      const consent = await consentFor(tx, workspaceId, [sub], [d.order_key], consentDefault);
      if (!consentPermits(sub, d.order_key, consent.states, consent.defaultGranted)) {
        throw new AppError(
          'CONFLICT',
          `the profile this delivery is about has not granted every consent category the subscription needs (${sub.consent_categories.join(', ')}); it cannot be sent`,
        );
      }
    }
    await deliveries.markPending(tx, d.id);
    await enqueueAttempt(tx, workspaceId, d.id, d.attempts + 1, 0, 'r', requestId);
  });
  return presentDelivery({ ...d, status: 'pending', next_attempt_at: new Date() });
}

export async function getAttempts(db: Db, workspaceId: string, id: string, deliveryId: string) {
  const d = await deliveries.getDeliveryOf(db, workspaceId, id, deliveryId);
  if (!d) throw notFound('delivery');
  const attempts = await deliveries.listAttempts(db, d.id);
  return attempts.map((a) => ({ ...a, attempted_at: iso(a.attempted_at)! }));
}
