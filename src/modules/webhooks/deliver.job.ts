import type { Logger } from 'pino';
import type { Db } from '../../platform/db';
import { backoffMs, type JobContext } from '../../platform/jobs';
import {
  type AttemptResult,
  type DeliveryStatus,
  getDelivery,
  markFailed,
  recordAttempt,
} from './deliveries.repo';
import { enqueueAttempt } from './fanout.job';
import { webhookPolicy } from './policy';
import { retryAfterMs, send } from './send';
import { signDelivery } from './signing';
import { disableSubscription, getSubscription } from './webhooks.repo';

export interface DeliverPayload {
  delivery_id: string;
  /** The attempt number this job makes; a job re-run after its attempt was recorded does nothing. */
  attempt: number;
}

/**
 * One attempt of one delivery. The handler plans the retry itself rather than failing the job: the
 * runner's backoff cannot take a receiver's Retry-After, and its attempt limit (100) is not the
 * point. The attempt's record and the next attempt's job are written in one transaction, so a crash
 * between them cannot lose the delivery; a crash before it re-runs the attempt (at-least-once).
 */
export async function deliverOnce(
  db: Db,
  payload: DeliverPayload,
  ctx: Pick<JobContext, 'signal'> & { allowPrivate: boolean; log?: Logger | undefined },
): Promise<void> {
  const d = await getDelivery(db, payload.delivery_id);
  // Deleted with its subscription, already delivered, or this attempt was made by an earlier run.
  if (!d || d.status === 'delivered' || d.attempts >= payload.attempt) return;
  const sub = await getSubscription(db, d.workspace_id, d.subscription_id);
  if (!sub?.enabled) {
    await markFailed(db, d.id, 'subscription disabled');
    return;
  }
  const n = d.attempts + 1;
  const body = JSON.stringify(d.body);
  const signed = signDelivery(sub.secret, d.id, Math.floor(Date.now() / 1000), body);
  const headers = {
    ...signed,
    'x-service-event': d.event_type,
    'x-service-delivery': d.id,
    'user-agent': 'cdp-webhooks/1',
  };
  const r = await send(sub.url, body, headers, {
    timeoutMs: webhookPolicy.timeoutMs,
    allowPrivate: ctx.allowPrivate,
    signal: ctx.signal,
  });
  const ok = r.statusCode !== null && r.statusCode >= 200 && r.statusCode < 300;
  const gone = r.statusCode === 410;
  let status: DeliveryStatus = 'delivered';
  let next: number | null = null;
  if (gone) status = 'failed';
  else if (!ok && n >= webhookPolicy.maxAttempts) status = 'dead';
  else if (!ok) {
    status = 'pending';
    const asked = retryAfterMs(r.retryAfter);
    next =
      asked !== null ? Math.min(asked, webhookPolicy.maxRetryAfterMs) : backoffMs(n, webhookPolicy.backoff);
  }
  const result: AttemptResult = {
    statusCode: r.statusCode,
    error: r.error ?? (ok ? null : `HTTP ${r.statusCode}`),
    durationMs: r.durationMs,
    status,
    nextAttemptInMs: next,
  };
  await db.transaction(async (tx) => {
    await recordAttempt(tx, d.id, n, result);
    // The receiver said the endpoint is gone for good: stop sending it anything.
    if (gone) await disableSubscription(tx, sub.id, 'the receiver answered 410 Gone');
    if (next !== null) await enqueueAttempt(tx, d.workspace_id, d.id, n + 1, next);
  });
  if (status === 'dead')
    ctx.log?.warn({ delivery_id: d.id, attempts: n }, 'webhooks: delivery dead-lettered');
}
