import type { Logger } from 'pino';
import type { Db, Queryable } from '../../platform/db';
import { newRequestId, REQUEST_ID_HEADER } from '../../platform/http/request-id';
import { backoffMs, type JobContext } from '../../platform/jobs';
import {
  type AttemptResult,
  type DeliveryRow,
  type DeliveryStatus,
  FINAL_STATUSES,
  getDelivery,
  markFailed,
  pendingAfter,
  pendingBefore,
  recordAttempt,
  takeAttempt,
} from './deliveries.repo';
import { enqueueAttempt } from './fanout.job';
import { webhookPolicy } from './policy';
import { retryAfterMs, send } from './send';
import { deliveryHeaders } from './signing';
import { disableSubscription, getSubscription, type SubscriptionRow } from './webhooks.repo';

/**
 * Attempts under way per subscription in this process, capped (webhookPolicy.perSubscription) so a
 * receiver that hangs holds a few of the queue's slots and never all of them. At the cap, an
 * attempt to a receiver that answers quickly waits here for a moment; one to a receiver whose
 * oldest attempt has been under way for `slowMs` is refused, and the caller puts it off.
 */
export function createSubscriptionSlots(limit: () => number, slowMs = 1_000) {
  const busy = new Map<string, number[]>(); // start times of the attempts under way
  const waiters = new Map<string, Array<() => void>>();
  const slow = (starts: number[]) => starts.length > 0 && Date.now() - Math.min(...starts) >= slowMs;
  return {
    async take(id: string): Promise<number | null> {
      for (;;) {
        const starts = busy.get(id) ?? [];
        if (starts.length < limit()) {
          const t = Date.now();
          busy.set(id, [...starts, t]);
          return t;
        }
        if (slow(starts)) return null;
        // Woken when one of its attempts ends, or after slowMs to look at it again.
        await new Promise<void>((resolve) => {
          const timer = setTimeout(wake, slowMs);
          function wake() {
            clearTimeout(timer);
            resolve();
          }
          waiters.set(id, [...(waiters.get(id) ?? []), wake]);
        });
      }
    },
    give(id: string, started: number): void {
      const starts = busy.get(id) ?? [];
      const i = starts.indexOf(started);
      if (i >= 0) starts.splice(i, 1);
      if (starts.length === 0) busy.delete(id);
      const next = waiters.get(id)?.shift();
      if (waiters.get(id)?.length === 0) waiters.delete(id);
      next?.();
    },
  };
}
export type SubscriptionSlots = ReturnType<typeof createSubscriptionSlots>;

/** Queues the delivery that waits on `d` (same subscription and profile), now that `d` is done with. */
export async function releaseNext(q: Queryable, d: DeliveryRow): Promise<void> {
  const next = await pendingAfter(q, d);
  if (next) await enqueueAttempt(q, next.workspace_id, next.id, next.attempts + 1, 0, `next${d.id}:`);
}

export interface DeliverPayload {
  delivery_id: string;
  /** The attempt number this job makes; a job re-run after its attempt was recorded does nothing. */
  attempt: number;
  /** The request that asked for it (a manual re-send); a planned attempt gets an id of its own. */
  request_id?: string;
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
  ctx: Pick<JobContext, 'signal'> & {
    allowPrivate: boolean;
    log?: Logger | undefined;
    slots?: SubscriptionSlots;
  },
): Promise<void> {
  const d = await getDelivery(db, payload.delivery_id);
  // Deleted with its subscription, already delivered, erased or cancelled, or this attempt was made
  // by an earlier run. (An erasure or a cancellation that commits after this read is caught by
  // takeAttempt, which takes only a pending delivery, right before the send.)
  if (!d || d.status === 'delivered' || FINAL_STATUSES.has(d.status) || d.attempts >= payload.attempt) return;
  const sub = await getSubscription(db, d.workspace_id, d.subscription_id);
  if (!sub?.enabled) {
    await db.transaction(async (tx) => {
      await markFailed(tx, d.id, 'subscription disabled');
      await releaseNext(tx, d);
    });
    return;
  }
  if (await pendingBefore(db, d)) {
    // An earlier fact about the same profile has not gone out yet: this one waits for it. Its end
    // releases this one at once (releaseNext); the wait below is only the safety net.
    await putOff(db, d, payload.attempt, 'after');
    return;
  }
  const slot = ctx.slots ? await ctx.slots.take(sub.id) : 0;
  if (slot === null) {
    // Its receiver is slow and already has its share of attempts under way here: this one is put
    // off (it is not an attempt, so it costs none of the 25).
    await putOff(db, d, payload.attempt, 'wait');
    return;
  }
  try {
    // Another job may hold the same attempt (a re-send, a release, a put-off one): one sends it.
    if (!(await takeAttempt(db, d.id, payload.attempt, webhookPolicy.timeoutMs + 20_000))) return;
    await attempt(db, d, sub, payload.request_id ?? newRequestId(), ctx);
  } finally {
    ctx.slots?.give(sub.id, slot);
  }
}

/** Queues the same attempt again later, under a key of its own (this job still holds its key). */
function putOff(db: Db, d: DeliveryRow, attemptNo: number, why: string): Promise<unknown> {
  const wait = webhookPolicy.deferMs * (1 + Math.random());
  return enqueueAttempt(db, d.workspace_id, d.id, attemptNo, wait, `${why}${Date.now().toString(36)}:`);
}

async function attempt(
  db: Db,
  d: DeliveryRow,
  sub: SubscriptionRow,
  requestId: string,
  ctx: Pick<JobContext, 'signal'> & { allowPrivate: boolean; log?: Logger | undefined },
): Promise<void> {
  const n = d.attempts + 1;
  const body = JSON.stringify(d.body);
  // The receiver's logs, ours and the attempt list name the same request.
  const headers = { ...deliveryHeaders(sub, d.id, d.event_type, body), [REQUEST_ID_HEADER]: requestId };
  const r = await send(sub.url, body, headers, {
    timeoutMs: webhookPolicy.timeoutMs,
    allowPrivate: ctx.allowPrivate,
    signal: ctx.signal,
  });
  const ok = r.statusCode !== null && r.statusCode >= 200 && r.statusCode < 300;
  const gone = r.statusCode === 410;
  let status: DeliveryStatus = 'delivered';
  let next: number | null = null;
  // Refused by the address guard (no connection made): every retry would be refused the same way,
  // so the delivery fails now with the reason; `redeliver` sends it once the URL or setting is fixed.
  if (gone || r.refused) status = 'failed';
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
    requestId,
  };
  await db.transaction(async (tx) => {
    // Erased or cancelled while this attempt was under way: it is recorded, nothing more is planned.
    const kept = await recordAttempt(tx, d.id, n, result);
    // The receiver said the endpoint is gone for good: stop sending it anything.
    if (gone) await disableSubscription(tx, sub.id, 'the receiver answered 410 Gone');
    if (kept && next !== null) await enqueueAttempt(tx, d.workspace_id, d.id, n + 1, next);
    // Done with (delivered, dead or refused): the next fact about the same profile may go now.
    else await releaseNext(tx, d);
  });
  if (status === 'dead')
    ctx.log?.warn(
      { delivery_id: d.id, attempts: n, request_id: requestId },
      'webhooks: delivery dead-lettered',
    );
}
