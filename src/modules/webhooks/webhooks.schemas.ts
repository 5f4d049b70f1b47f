import { Type } from 'typebox';
import { pagedQuery } from '../../platform/http/paging';
import { EVENT_KINDS, MAX_URL_LENGTH } from './policy';

const EventKind = Type.Union(EVENT_KINDS.map((k) => Type.Literal(k)));
const Events = Type.Array(EventKind, { minItems: 1, maxItems: EVENT_KINDS.length, uniqueItems: true });
const Url = Type.String({ minLength: 1, maxLength: MAX_URL_LENGTH });
/** `whsec_` + base64 (Standard Webhooks form) or any other string; generated when absent. */
const Secret = Type.String({ minLength: 16, maxLength: 200, pattern: '^[\\x21-\\x7e]+$' });

export const CreateWebhookBody = Type.Object(
  { url: Url, events: Events, secret: Type.Optional(Secret) },
  { additionalProperties: false },
);

export const PatchWebhookBody = Type.Object(
  {
    url: Type.Optional(Url),
    events: Type.Optional(Events),
    secret: Type.Optional(Secret),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const WebhookIdParams = Type.Object({ id: Type.String({ maxLength: 100 }) });
export const DeliveryIdParams = Type.Object({
  id: Type.String({ maxLength: 100 }),
  delivery_id: Type.String({ maxLength: 100 }),
});
export const ListWebhooksQuery = pagedQuery();
export const ListDeliveriesQuery = pagedQuery();

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);

export const WebhookSchema = Type.Object({
  id: Type.String(),
  url: Type.String(),
  events: Type.Array(Type.String()),
  secret: Type.String({ description: 'Signs every delivery; shown to admins only.' }),
  enabled: Type.Boolean(),
  disabled_reason: Nullable(Type.String()),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
});

export const DeletedWebhookSchema = Type.Object({ id: Type.String(), deleted: Type.Literal(true) });

export const DeliverySchema = Type.Object({
  id: Type.String(),
  event_id: Type.String(),
  event_type: Type.String(),
  status: Type.Union([
    Type.Literal('pending'),
    Type.Literal('delivered'),
    Type.Literal('failed'),
    Type.Literal('dead'),
  ]),
  attempts: Type.Integer(),
  last_status_code: Nullable(Type.Integer()),
  last_error: Nullable(Type.String()),
  last_attempt_at: Nullable(Type.String({ format: 'date-time' })),
  next_attempt_at: Nullable(Type.String({ format: 'date-time' })),
  created_at: Type.String({ format: 'date-time' }),
});
