import { Type } from 'typebox';
import { Envelope, ok, PageEnvelope } from '../../platform/http/envelope';
import { paged, pageOf } from '../../platform/http/paging';
import { workspaceOf } from '../../platform/http/principal';
import type { App, AppDeps } from '../../platform/http/types';
import { consentDefaultFrom } from './consent';
import * as deliveryApi from './deliveries.service';
import {
  CreateWebhookBody,
  DeletedWebhookSchema,
  DeliveryIdParams,
  DeliverySchema,
  ListDeliveriesQuery,
  ListWebhooksQuery,
  PatchWebhookBody,
  RotateSecretBody,
  TestSendSchema,
  WebhookIdParams,
  WebhookSchema,
} from './webhooks.schemas';
import * as webhooks from './webhooks.service';

const tags = ['webhooks'];
const security = [{ apiKey: [] }];

const AttemptSchema = Type.Object({
  n: Type.Integer(),
  status_code: Type.Union([Type.Integer(), Type.Null()]),
  error: Type.Union([Type.String(), Type.Null()]),
  duration_ms: Type.Integer(),
  attempted_at: Type.String({ format: 'date-time' }),
  request_id: Type.Union([Type.String(), Type.Null()], {
    description:
      'The `X-Request-Id` the attempt sent: a re-send’s is the `redeliver` request’s (and its audit entry’s); null before request ids were kept.',
  }),
});

/** Outbound webhook subscriptions and their deliveries (docs/webhooks.md); admin keys only. */
export function registerWebhookRoutes(app: App, deps: AppDeps): void {
  const allowPrivate = deps.config.allowPrivateWebhooks;

  app.post(
    '/tenant/webhooks',
    {
      config: { auth: 'admin', audit: { action: 'webhook.create', target: 'webhook' } },
      schema: {
        tags,
        security,
        summary:
          'Subscribe a URL to event kinds. The URL must be https:// on a public address; a missing ' +
          'secret is generated (`whsec_` + base64). Deliveries are signed with it.',
        body: CreateWebhookBody,
        response: { 200: Envelope(WebhookSchema) },
      },
    },
    async (req) => ok(await webhooks.createWebhook(deps.db, workspaceOf(req), req.body, allowPrivate)),
  );

  app.get(
    '/tenant/webhooks',
    {
      config: { auth: 'admin' },
      schema: {
        tags,
        security,
        summary: 'List webhook subscriptions, oldest first.',
        querystring: ListWebhooksQuery,
        response: { 200: PageEnvelope(WebhookSchema) },
      },
    },
    async (req) =>
      paged(
        await webhooks.listWebhooks(
          deps.db,
          deps.cursors,
          workspaceOf(req),
          pageOf(req, deps.cursors, 'webhooks'),
        ),
      ),
  );

  app.get(
    '/tenant/webhooks/:id',
    {
      config: { auth: 'admin' },
      schema: {
        tags,
        security,
        summary: 'One webhook subscription, with its secret.',
        params: WebhookIdParams,
        response: { 200: Envelope(WebhookSchema) },
      },
    },
    async (req) => ok(await webhooks.getWebhook(deps.db, workspaceOf(req), req.params.id)),
  );

  app.patch(
    '/tenant/webhooks/:id',
    {
      config: { auth: 'admin', audit: { action: 'webhook.update', target: 'webhook' } },
      schema: {
        tags,
        security,
        summary:
          'Change a subscription: url, events, segments, secret (replaced at once, ending any grace ' +
          'period; see rotate-secret), or `enabled` (true re-enables one disabled by a 410).',
        params: WebhookIdParams,
        body: PatchWebhookBody,
        response: { 200: Envelope(WebhookSchema) },
      },
    },
    async (req) =>
      ok(await webhooks.updateWebhook(deps.db, workspaceOf(req), req.params.id, req.body, allowPrivate)),
  );

  app.post(
    '/tenant/webhooks/:id/rotate-secret',
    {
      config: { auth: 'admin', audit: { action: 'webhook.rotate_secret', target: 'webhook' } },
      // The body is optional: a bare POST rotates to a generated secret with the default grace.
      preValidation: async (req) => {
        req.body ??= {};
      },
      schema: {
        tags,
        security,
        summary:
          'Replace the secret (the given one, or a new `whsec_` one) while the old one keeps signing ' +
          'deliveries too for `grace_seconds` (default 86400): X-Service-Signature-Previous and a second ' +
          '`v1,` signature in webhook-signature. Rotating again during a grace period drops the oldest secret.',
        params: WebhookIdParams,
        body: RotateSecretBody,
        response: { 200: Envelope(WebhookSchema) },
      },
    },
    async (req) => ok(await webhooks.rotateSecret(deps.db, workspaceOf(req), req.params.id, req.body)),
  );

  app.post(
    '/tenant/webhooks/:id/test',
    {
      config: { auth: 'admin', audit: { action: 'webhook.test', target: 'webhook' } },
      schema: {
        tags,
        security,
        summary:
          'Send one synthetic `webhook.test` event now, signed like a delivery, disabled subscriptions ' +
          'included, and answer what the receiver said. Not stored, not retried; 10 per subscription per minute.',
        params: WebhookIdParams,
        response: { 200: Envelope(TestSendSchema) },
      },
    },
    async (req, reply) => {
      // A client that gives up stops the outbound request too (after the answer this is a no-op).
      const gone = new AbortController();
      reply.raw.once('close', () => gone.abort());
      return ok(
        await webhooks.testSend(deps.db, deps.limits, workspaceOf(req), req.params.id, {
          allowPrivate,
          signal: gone.signal,
          requestId: req.id,
        }),
      );
    },
  );

  app.delete(
    '/tenant/webhooks/:id',
    {
      config: { auth: 'admin', audit: { action: 'webhook.delete', target: 'webhook' } },
      schema: {
        tags,
        security,
        summary: 'Delete a subscription with its deliveries; nothing more is sent to it.',
        params: WebhookIdParams,
        response: { 200: Envelope(DeletedWebhookSchema) },
      },
    },
    async (req) => ok(await webhooks.deleteWebhook(deps.db, workspaceOf(req), req.params.id)),
  );

  app.get(
    '/tenant/webhooks/:id/deliveries',
    {
      config: { auth: 'admin' },
      schema: {
        tags,
        security,
        summary:
          'Deliveries of a subscription, newest first: status (pending, delivered, failed, dead), ' +
          'attempts, the last answer and when the next attempt is due.',
        params: WebhookIdParams,
        querystring: ListDeliveriesQuery,
        response: { 200: PageEnvelope(DeliverySchema) },
      },
    },
    async (req) => {
      const page = pageOf(req, deps.cursors, 'webhook-deliveries', req.params.id);
      return paged(
        await deliveryApi.listDeliveries(deps.db, deps.cursors, workspaceOf(req), req.params.id, page),
      );
    },
  );

  app.get(
    '/tenant/webhooks/:id/deliveries/:delivery_id',
    {
      config: { auth: 'admin' },
      schema: {
        tags,
        security,
        summary: 'Every attempt of one delivery: answer status, error, duration and time.',
        params: DeliveryIdParams,
        response: { 200: Envelope(Type.Array(AttemptSchema)) },
      },
    },
    async (req) =>
      ok(await deliveryApi.getAttempts(deps.db, workspaceOf(req), req.params.id, req.params.delivery_id)),
  );

  app.post(
    '/tenant/webhooks/:id/deliveries/:delivery_id/redeliver',
    {
      config: { auth: 'admin', audit: { action: 'webhook.redeliver', target: 'webhook_delivery' } },
      schema: {
        tags,
        security,
        summary: 'Send a delivery again now, whatever its state (a dead or failed one included).',
        params: DeliveryIdParams,
        response: { 200: Envelope(DeliverySchema) },
      },
    },
    async (req) =>
      ok(
        await deliveryApi.redeliver(
          deps.db,
          workspaceOf(req),
          req.params.id,
          req.params.delivery_id,
          consentDefaultFrom(deps.settings),
          req.id,
        ),
      ),
  );
}
