import type { Logger } from 'pino';
import type { JobRunner } from '../../platform/jobs';
import { type DeliverPayload, deliverOnce } from './deliver.job';
import { fanOutAll } from './fanout.job';
import { DELIVER_QUEUE, FANOUT_QUEUE, webhookPolicy } from './policy';

export interface WebhookJobOptions {
  log: Logger;
  /** CDP_ALLOW_PRIVATE_WEBHOOKS: skip the send-time address check too. */
  allowPrivate: boolean;
}

/** The webhook queues of a worker process: the outbox fan-out (scheduled) and the attempts. */
export async function registerWebhookJobs(runner: JobRunner, opts: WebhookJobOptions): Promise<void> {
  runner.register(FANOUT_QUEUE, (_payload, { db, signal }) => fanOutAll(db, signal), { timeoutMs: 60_000 });
  runner.register<DeliverPayload>(
    DELIVER_QUEUE,
    (payload, { db, signal }) =>
      deliverOnce(db, payload, { signal, allowPrivate: opts.allowPrivate, log: opts.log }),
    // The send has its own timeout; this one also covers the bookkeeping around it.
    { timeoutMs: webhookPolicy.timeoutMs + 20_000 },
  );
  await runner.schedule('webhooks.fanout', webhookPolicy.fanoutEvery, FANOUT_QUEUE, {});
}
