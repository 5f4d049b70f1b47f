import type { BackoffPolicy } from '../../platform/jobs';

/**
 * How deliveries are retried. Exponential backoff with full jitter (platform/jobs backoff): ceilings
 * 1, 2, 4 … 128 min, then 4 h; 25 attempts put the sum of the ceilings at ≈ 68 h, so the expected
 * span of the retries (half of that) is ≈ 34 h and the 24 h docs/webhooks.md promises is met with room.
 * Mutable so tests can shorten it before the service starts (read when the queues register and at
 * every attempt).
 */
export const webhookPolicy: {
  backoff: BackoffPolicy;
  maxAttempts: number;
  /** Per attempt: connect, send and the whole answer. */
  timeoutMs: number;
  /** A Retry-After longer than this is capped (a receiver cannot park a delivery for days). */
  maxRetryAfterMs: number;
  /**
   * How often every workspace's outbox is read regardless: the safety net under the pump, which
   * reads a workspace's outbox at each commit that wrote facts to it (fanout.pump.ts).
   */
  fanoutEvery: string;
  /** Attempts one process makes at once (slots of their own in the job runner). */
  concurrency: number;
  /**
   * Attempts to one subscription one process makes at once: a slow or hanging receiver holds at
   * most these slots, the rest keep serving the others. Its other due attempts wait `deferMs`.
   */
  perSubscription: number;
  deferMs: number;
} = {
  backoff: { baseMs: 60_000, capMs: 4 * 3_600_000 },
  maxAttempts: 25,
  timeoutMs: 10_000,
  maxRetryAfterMs: 6 * 3_600_000,
  fanoutEvery: 'every 10s',
  concurrency: 32,
  perSubscription: 4,
  deferMs: 5_000,
};

export const FANOUT_QUEUE = 'webhooks.fanout';
export const DELIVER_QUEUE = 'webhooks.deliver';
/** Facts fanned out per workspace per transaction; the job loops until the outbox is caught up. */
export const FANOUT_BATCH = 500;

/** Limits (docs/webhooks.md). */
export const MAX_URL_LENGTH = 2048;
export const MAX_SUBSCRIPTIONS = 50;
export const EVENT_KINDS = [
  'profile.created',
  'profile.merged',
  'order.completed',
  'churn.risk_escalated',
  'segment.entered',
  'segment.exited',
] as const;
