/**
 * The webhooks module's public API. Tables: webhook_subscriptions, webhook_cursors,
 * webhook_deliveries, webhook_attempts. Facts come from the outbox (read past a per-workspace
 * cursor), go out signed, and are retried by the job runner until delivered or dead.
 */

// Consent on the output (consent.ts): the workflows' withdrawal, and the consent default.
export {
  type ConsentDefaultOf,
  consentDefaultFrom,
  settleWithdrawal,
  type Withdrawal,
  type WithdrawalSubject,
  withdrawDeliveries,
} from './consent';
export { webhooksPersonalData } from './personal-data';
export { webhookPolicy } from './policy';
export { registerWebhookJobs, type WebhookJobOptions } from './webhooks.jobs';
export { registerWebhookRoutes } from './webhooks.routes';
