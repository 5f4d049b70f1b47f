import type { Logger } from 'pino';
import type { Db } from '../../platform/db';
import type { JobRunner } from '../../platform/jobs';
import type { ConsentDefaultOf } from './consent';
import { createSubscriptionSlots, type DeliverPayload, deliverOnce } from './deliver.job';
import { fanOutAll } from './fanout.job';
import { startFanOutPump } from './fanout.pump';
import { DELIVER_QUEUE, FANOUT_QUEUE, webhookPolicy } from './policy';

export interface WebhookJobOptions {
  db: Db;
  log: Logger;
  /** CDP_ALLOW_PRIVATE_WEBHOOKS: skip the send-time address check too. */
  allowPrivate: boolean;
  /** The workspace's consent default (settings `consent_default`), for the fan-out's consent gate. */
  consentDefault: ConsentDefaultOf;
}

/**
 * The webhook work of a worker process: the outbox fan-out (the pump at each commit, the schedule
 * as a safety net) and the attempts, with slots of their own. Answers the pump's stop.
 */
export async function registerWebhookJobs(
  runner: JobRunner,
  opts: WebhookJobOptions,
): Promise<() => Promise<void>> {
  const fanOut = { consentDefault: opts.consentDefault };
  runner.register(FANOUT_QUEUE, (_payload, { db, signal }) => fanOutAll(db, signal, fanOut), {
    timeoutMs: 60_000,
  });
  const slots = createSubscriptionSlots(() => webhookPolicy.perSubscription);
  runner.register<DeliverPayload>(
    DELIVER_QUEUE,
    (payload, { db, signal }) =>
      deliverOnce(db, payload, { signal, allowPrivate: opts.allowPrivate, log: opts.log, slots }),
    // The send has its own timeout; this one also covers the bookkeeping around it.
    { timeoutMs: webhookPolicy.timeoutMs + 20_000, concurrency: webhookPolicy.concurrency },
  );
  await runner.schedule('webhooks.fanout', webhookPolicy.fanoutEvery, FANOUT_QUEUE, {});
  return startFanOutPump({ ...fanOut, db: opts.db, log: opts.log, onDeliveries: () => runner.wake() });
}
