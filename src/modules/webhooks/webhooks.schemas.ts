import { Type } from 'typebox';
import { pagedQuery } from '../../platform/http/paging';
import { CategoryNameSchema } from '../ingest';
import { EVENT_KINDS, MAX_URL_LENGTH } from './policy';

/** Limits of rotation and segment filters (docs/webhooks.md). */
export const MAX_SEGMENT_FILTER = 100;
export const MAX_CONSENT_CATEGORIES = 20;
export const DEFAULT_GRACE_SECONDS = 86_400;
export const MAX_GRACE_SECONDS = 7 * 86_400;

const EventKind = Type.Union(EVENT_KINDS.map((k) => Type.Literal(k)));
const Events = Type.Array(EventKind, { minItems: 1, maxItems: EVENT_KINDS.length, uniqueItems: true });
const Url = Type.String({ minLength: 1, maxLength: MAX_URL_LENGTH });
/** `whsec_` + base64 (Standard Webhooks form) or any other string; generated when absent. */
const Secret = Type.String({ minLength: 16, maxLength: 200, pattern: '^[\\x21-\\x7e]+$' });

/** Segment ids (saved segments of the workspace) whose segment.entered / segment.exited are wanted. */
const Segments = Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
  maxItems: MAX_SEGMENT_FILTER,
  uniqueItems: true,
  description:
    'Only these segments’ `segment.entered` / `segment.exited` facts are sent (other kinds are not ' +
    'affected); empty or absent: every segment’s. Each must be a segment of the workspace.',
});

/** Consent categories every profile's facts need (docs/webhooks.md, "Consent"). */
const ConsentCategories = Type.Array(CategoryNameSchema, {
  maxItems: MAX_CONSENT_CATEGORIES,
  uniqueItems: true,
  description:
    'A fact about a profile is delivered only when the profile has granted every one of these consent ' +
    'categories (a category with no recorded choice counts as the workspace setting `consent_default`); ' +
    'facts about no profile are not affected. Empty or absent: no consent needed.',
});

export const CreateWebhookBody = Type.Object(
  {
    url: Url,
    events: Events,
    secret: Type.Optional(Secret),
    segments: Type.Optional(Segments),
    consent_categories: Type.Optional(ConsentCategories),
  },
  { additionalProperties: false },
);

export const PatchWebhookBody = Type.Object(
  {
    url: Type.Optional(Url),
    events: Type.Optional(Events),
    secret: Type.Optional(Secret),
    enabled: Type.Optional(Type.Boolean()),
    segments: Type.Optional(Segments),
    consent_categories: Type.Optional(ConsentCategories),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const RotateSecretBody = Type.Object(
  {
    secret: Type.Optional(Secret),
    grace_seconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_GRACE_SECONDS,
        default: DEFAULT_GRACE_SECONDS,
        description:
          'How long the replaced secret keeps signing deliveries beside the new one (default 86400 = 24 h; 0 ends it now).',
      }),
    ),
  },
  { additionalProperties: false },
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
  previous_secret_expires_at: Nullable(
    Type.String({
      format: 'date-time',
      description:
        'Until when the secret a rotation replaced still signs deliveries too; null outside a grace period.',
    }),
  ),
  segments: Type.Array(Type.String()),
  consent_categories: Type.Array(Type.String()),
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
    Type.Literal('erased'),
    Type.Literal('cancelled'),
  ]),
  attempts: Type.Integer(),
  last_status_code: Nullable(Type.Integer()),
  last_error: Nullable(Type.String()),
  last_attempt_at: Nullable(Type.String({ format: 'date-time' })),
  next_attempt_at: Nullable(Type.String({ format: 'date-time' })),
  created_at: Type.String({ format: 'date-time' }),
});

export const TestSendSchema = Type.Object({
  delivered: Type.Boolean({ description: 'The receiver answered 2xx in time.' }),
  status_code: Nullable(Type.Integer()),
  error: Nullable(Type.String()),
  duration_ms: Type.Integer(),
});
