import { type Static, Type } from 'typebox';
import { ConsentChoicesSchema } from './consent-choices';
import { DEFAULT_STATUS, MAX_AMOUNT, MAX_ITEMS, MAX_QUANTITY, ORDER_STATUSES } from './order-payload';
import { TRAIT_LIMITS } from './trait-limits';

/**
 * The ingestion event (docs/ingestion.md). Everything a JSON schema can say is
 * said here, so the OpenAPI document is the reference; the rules a schema says badly (either
 * `identity` or `anonymous_id`, order payloads, time bounds, payload depth) live in
 * ingest.rules.ts and report JSON-pointer paths the same way.
 */
export const EVENT_TYPES = ['track', 'page', 'identify', 'order'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export const LIMITS = {
  /** Events per batch request (spec); more is 413 BATCH_TOO_LARGE. */
  batchEvents: 1000,
  /** Body of POST /api/ingest. */
  singleBodyBytes: 32 * 1024,
  /** Body of POST /tenant/ingest/batch. */
  batchBodyBytes: 4 * 1024 * 1024,
  /** One event's payload, serialized as JSON (so a batch item is bounded like a single event). */
  payloadBytes: 32 * 1024,
  /** Nesting of objects and arrays inside `payload` (the payload itself is level 1). */
  payloadDepth: 10,
  /** Length of names, identities, message ids, payload keys. */
  text: 200,
  /** How far ahead of the server's clock a `timestamp` may be (clock skew allowance). */
  futureSkewMs: 24 * 60 * 60 * 1000,
  /** Earliest accepted `timestamp`: historical imports are welcome, the Unix epoch is the floor. */
  earliest: Date.UTC(1970, 0, 1),
} as const;

const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';

export const IngestEventSchema = Type.Object(
  {
    event_type: Type.Enum([...EVENT_TYPES], {
      description: '`order` events also need `payload.order_id` and `payload.total` (see payload).',
    }),
    event_name: Type.String({ minLength: 1, maxLength: LIMITS.text, description: 'Descriptive label.' }),
    anonymous_id: Type.Optional(
      Type.String({
        pattern: UUID_PATTERN,
        description:
          'Client cookie id, a UUID of any version (stored lower-case). Required when `identity` is absent.',
      }),
    ),
    identity: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: LIMITS.text,
        description:
          'Authoritative identifier: e-mail, phone (E.164) or CRM id. Required when `anonymous_id` is absent.',
      }),
    ),
    payload: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), {
        description:
          `Arbitrary properties: at most ${LIMITS.payloadBytes} bytes as JSON and ${LIMITS.payloadDepth} ` +
          'levels of nesting; strings and keys must not contain NUL characters or unpaired surrogates. ' +
          'For `identify`, keys are traits (`email`, `first_name`, `last_name` set those fields), at most ' +
          `${TRAIT_LIMITS.keysPerWrite} keys in all, nested keys included (docs/profiles.md, "Limits"). ` +
          `For \`order\`: \`order_id\` (string ≤ 200, required), \`total\` (number 0–${MAX_AMOUNT}, required), ` +
          '`currency` (ISO 4217 code, default `USD`), `status` (one of ' +
          `${ORDER_STATUSES.map((s) => `\`${s}\``).join(', ')}, any case; default \`${DEFAULT_STATUS}\`), ` +
          `\`items\` (≤ ${MAX_ITEMS} of \`{product_id (required), ` +
          `name, price (0–${MAX_AMOUNT}), quantity (integer 1–${MAX_QUANTITY}), category}\`). Amounts are ` +
          'stored with 2 decimals.',
      }),
    ),
    timestamp: Type.Optional(
      Type.String({
        format: 'date-time',
        maxLength: 64,
        description:
          'When the event happened: RFC 3339 date-time with offset (e.g. `2024-05-01T12:00:00Z`). ' +
          'Historical times are accepted (from 1970); more than 24 h ahead of the server clock is refused. ' +
          'Defaults to the time of receipt.',
      }),
    ),
    message_id: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: LIMITS.text,
        description:
          'Client de-duplication key: a re-sent event with the same `message_id` in the workspace is ' +
          'stored once, and the re-send answers with the original `event_id`.',
      }),
    ),
    consent: Type.Optional(
      Type.Object(
        { categories: ConsentChoicesSchema },
        {
          additionalProperties: false,
          description:
            'The person’s consent choices as of the event’s `timestamp`, recorded on the profile the event is ' +
            'applied to when newer than the recorded ones (docs/profiles.md, "Consent").',
        },
      ),
    ),
    writeKey: Type.Optional(
      Type.String({
        maxLength: 200,
        description:
          "The API key, Segment's way (its browser library sends it here). Taken out of the event " +
          'before validation; when present in several events of a batch it must be the same key, and ' +
          'it must agree with an `X-API-Key` or Basic-auth key sent with it (else 401).',
      }),
    ),
  },
  { additionalProperties: false },
);

export type IngestEvent = Static<typeof IngestEventSchema>;

export const IngestBatchSchema = Type.Array(IngestEventSchema, {
  minItems: 1,
  maxItems: LIMITS.batchEvents,
  description: `1 to ${LIMITS.batchEvents} events. Accepted or refused as a whole.`,
});

export const IngestAckSchema = Type.Object({
  status: Type.Literal('enqueued'),
  event_id: Type.String({ description: '`evt_…`; the original id when `message_id` was seen before.' }),
});

export const BatchAckSchema = Type.Object({
  status: Type.Literal('enqueued'),
  batch_id: Type.String({ description: '`bat_…`, for logs and support.' }),
  count: Type.Integer({ description: 'Number of events in the request.' }),
  event_ids: Type.Array(Type.String(), { description: 'One `evt_…` id per event, in request order.' }),
});
