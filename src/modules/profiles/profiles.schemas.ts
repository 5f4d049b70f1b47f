import { Type } from 'typebox';
import { PageQuery } from '../../platform/cursor';
import { ConsentChoicesSchema } from '../ingest';
import { TRAIT_LIMITS } from './traits';

/** PostgreSQL text and jsonb cannot hold NUL; refusing it here keeps a `\u0000` from becoming a 500. */
const NO_NUL = '^[^\\u0000]*$';

const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);

const FreeJson = (description: string) => Type.Object({}, { additionalProperties: true, description });

export const IdentitySchema = Type.Object({
  type: Type.String({ description: '`email`, `phone`, `external_id` or `anonymous_id` (docs/profiles.md).' }),
  value: Type.String({ description: 'Normalized: e-mail lower-cased, phone E.164.' }),
});

export const ProfileSchema = Type.Object({
  id: Type.String({ format: 'uuid' }),
  email: Nullable(Type.String()),
  first_name: Nullable(Type.String()),
  last_name: Nullable(Type.String()),
  total_spend: Type.Number({ description: 'Sum of completed orders (decimal).' }),
  rfm_segment: Nullable(Type.String({ description: 'RFM label; null for a profile without orders.' })),
  churn_risk_score: Type.Union([Type.Number({ minimum: 0, maximum: 1 }), Type.Null()]),
  predicted_clv: Type.Union([Type.Number(), Type.Null()]),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
  attributes: FreeJson('Merged traits (docs/profiles.md, "Trait merge rules").'),
  identities: Type.Array(IdentitySchema, { description: 'Every identifier linked to the profile.' }),
});

export const ProfileIdParams = Type.Object({
  id: Type.String({ maxLength: 100, description: 'Profile id (a merged-away id reads the survivor).' }),
});

export const ListProfilesQuery = Type.Object(
  {
    ...PageQuery,
    email: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 320,
        pattern: NO_NUL,
        description: 'Exact e-mail, after normalization.',
      }),
    ),
    identity: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 500,
        pattern: NO_NUL,
        description:
          'Any identifier of the profile (e-mail, phone, external id or anonymous id), normalized.',
      }),
    ),
  },
  { additionalProperties: false },
);

export const UpsertProfileBody = Type.Object(
  {
    id: Type.Optional(Type.String({ maxLength: 100, description: 'Update this profile (404 if unknown).' })),
    identity: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 500,
        pattern: NO_NUL,
        description: 'E-mail, phone or external id.',
      }),
    ),
    email: Type.Optional(Type.String({ minLength: 3, maxLength: 320, pattern: NO_NUL })),
    first_name: Type.Optional(Nullable(Type.String({ maxLength: 200, pattern: NO_NUL }))),
    last_name: Type.Optional(Nullable(Type.String({ maxLength: 200, pattern: NO_NUL }))),
    attributes: Type.Optional(
      Type.Object(
        {},
        {
          additionalProperties: true,
          maxProperties: 200,
          description:
            `Merged by the trait rules. At most ${TRAIT_LIMITS.keysPerWrite} keys in all (nested keys ` +
            `included) and ${TRAIT_LIMITS.depth} levels; the profile's attributes may not grow past ` +
            `${TRAIT_LIMITS.profileAttributesBytes} bytes as JSON (docs/profiles.md, "Limits").`,
        },
      ),
    ),
  },
  { additionalProperties: false },
);

export const DeleteProfileQuery = Type.Object(
  {
    suppress: Type.Optional(
      Type.Boolean({
        default: false,
        description: 'Also block the identifiers from creating a profile again.',
      }),
    ),
  },
  { additionalProperties: false },
);

export const ErasureSchema = Type.Object({
  id: Type.String({ description: 'The erasure log entry (era_…).' }),
  profile_id: Type.String({ format: 'uuid' }),
  erased_profile_ids: Type.Array(Type.String({ format: 'uuid' })),
  suppressed: Type.Boolean(),
  counts: Type.Record(Type.String(), Type.Integer(), {
    description:
      'Rows removed per table (an order is unlinked, a webhook delivery scrubbed, not removed): `profiles`, `events`, ' +
      '`event_properties`, `identity_nodes`, `profile_lineage`, `orders`, `outbox`, `webhook_deliveries`, … ' +
      '(docs/profiles.md, "What is kept about a person").',
  }),
});

export const TimelineEventSchema = Type.Object({
  id: Type.String({ description: 'evt_…' }),
  event_type: Type.String(),
  event_name: Type.String(),
  anonymous_id: Nullable(Type.String()),
  identity: Nullable(Type.String()),
  payload: FreeJson('The event’s properties as sent.'),
  timestamp: Type.String({ format: 'date-time', description: 'When it happened (event time).' }),
  received_at: Type.String({ format: 'date-time' }),
});

const AnyJson = Type.Unknown({ description: 'Any JSON value; null when absent.' });

export const LineageSchema = Type.Object({
  path: Type.String({ description: 'JSON pointer of the field: /email, /attributes/plan/tier.' }),
  old: AnyJson,
  new: AnyJson,
  source_type: Type.Union([Type.Literal('event'), Type.Literal('api_key')]),
  source_id: Nullable(Type.String({ description: 'The event id (evt_…) or API key id (key_…).' })),
  merged_from: Nullable(
    Type.String({ description: 'Set when the change came from merging that profile in.' }),
  ),
  occurred_at: Type.String({
    format: 'date-time',
    description: 'Time of the write the newer-wins rule used.',
  }),
  recorded_at: Type.String({ format: 'date-time' }),
});

export const PageOnlyQuery = Type.Object(PageQuery, { additionalProperties: false });

export const PutConsentBody = Type.Object(
  { categories: ConsentChoicesSchema },
  { additionalProperties: false },
);

export const ConsentCategorySchema = Type.Object({
  granted: Type.Boolean(),
  updated_at: Type.String({
    format: 'date-time',
    description: 'When the choice was made (event or request time).',
  }),
  source_type: Type.Union([Type.Literal('event'), Type.Literal('api_key')]),
  source_id: Nullable(Type.String({ description: 'The event id (evt_…) or API key id (key_…).' })),
});

export const ConsentSchema = Type.Object({
  categories: Type.Record(Type.String(), ConsentCategorySchema, {
    description:
      'The recorded choice per category; a category not listed counts as the workspace’s `consent_default`.',
  }),
});

export const ConsentAnswerSchema = Type.Object({
  profile_id: Type.String({ format: 'uuid' }),
  ...ConsentSchema.properties,
});

/** GET /tenant/profiles/{id}: the profile and its consent. */
export const ProfileWithConsentSchema = Type.Object({ ...ProfileSchema.properties, consent: ConsentSchema });
