import { type Static, type TSchema, Type } from 'typebox';
import { DEFAULT_LIMITS } from '../../platform/http/rate-limit';

/**
 * Every workspace setting, in one place: key, default, range and description. The HTTP routes,
 * the CLI (`cdp settings`), the stored-value reader and /openapi.json all use these schemas, so
 * they accept and document the same things. docs/api.md ("Workspace settings") repeats the table.
 */

/** The documented defaults (docs/api.md, "Workspace settings"): what a workspace that never changed anything gets. */
export const DEFAULT_SETTINGS = Object.freeze({
  rate_limits: Object.freeze({
    requests_per_minute: DEFAULT_LIMITS.standard,
    batch_events_per_minute: DEFAULT_LIMITS.batch,
  }),
  junk_identifiers: Object.freeze([] as string[]),
  merge_cap: 100,
  churn_threshold: 0.7,
  discount_rate: 0.1,
  clv_horizon_days: 365,
  analytics_concurrency: 2,
  retention: Object.freeze({
    events_days: 'forever' as RetentionDays,
    dead_letters_days: 'forever' as RetentionDays,
    outbox_days: 30 as RetentionDays,
    segment_changes_days: 'forever' as RetentionDays,
    lineage_days: 'forever' as RetentionDays,
    audit_days: 400 as RetentionDays,
  }),
  consent_default: 'granted' as ConsentDefault,
});

/** Days a kind of row is kept after it was written, or `forever`. */
export type RetentionDays = number | 'forever';
/** What a profile with no recorded choice for a consent category counts as. */
export type ConsentDefault = 'granted' | 'denied';

/** The retention settings (docs/api.md, "Retention"): what each one keeps, and for how long by default. */
export const RETENTION_KEYS = [
  'events_days',
  'dead_letters_days',
  'outbox_days',
  'segment_changes_days',
  'lineage_days',
  'audit_days',
] as const;
export type RetentionKey = (typeof RETENTION_KEYS)[number];
/** Longest retention that is a number of days (100 years); past it, say `forever`. */
export const MAX_RETENTION_DAYS = 36_500;

export const MAX_JUNK_IDENTIFIERS = 1000;
/** High enough to switch a limit off in practice (benchmarks, trusted back ends), still a number. */
export const MAX_RATE = 1_000_000_000;

/** The schema of each setting (without `default`: the patch schema below reuses them). */
const FIELDS = {
  requests_per_minute: {
    type: 'integer',
    minimum: 1,
    maximum: MAX_RATE,
    description: `Requests per minute per API key on every route but the batch endpoint (standard tier). Integer 1–1,000,000,000; default ${DEFAULT_LIMITS.standard}.`,
  },
  batch_events_per_minute: {
    type: 'integer',
    minimum: 1,
    maximum: MAX_RATE,
    description: `Events per minute per API key on POST /tenant/ingest/batch (a batch of N consumes N). Integer 1–1,000,000,000; default ${DEFAULT_LIMITS.batch}.`,
  },
  junk_identifiers: {
    type: 'array',
    maxItems: MAX_JUNK_IDENTIFIERS,
    items: { type: 'string', minLength: 1, maxLength: 500 },
    description:
      'Identifier values that never link anything, on top of the built-in ones (`null`, `undefined`, `anonymous`, `0`, empty, …): ' +
      'compared trimmed and lower-cased, and after normalization (a listed `+1 555 0100` also catches `+15550100`). ' +
      'Up to 1000 values of 1–500 characters; a PATCH replaces the whole list. Default: none.',
  },
  merge_cap: {
    type: 'integer',
    minimum: 1,
    maximum: 1000,
    description:
      'Most profiles that may be merged into one profile; a merge past it is refused (409 on POST /identity/merge, logged by the pipeline). Integer 1–1000; default 100.',
  },
  churn_threshold: {
    type: 'number',
    exclusiveMinimum: 0,
    exclusiveMaximum: 1,
    description:
      'Churn risk score above which a profile counts as at risk; `churn.risk_escalated` fires when a score crosses it upward. Number in (0, 1), exclusive; default 0.7.',
  },
  discount_rate: {
    type: 'number',
    minimum: 0,
    maximum: 1,
    description:
      'Annual discount rate applied to predicted future spend (predicted_clv). Number in [0, 1]; default 0.10 (10 % a year).',
  },
  clv_horizon_days: {
    type: 'integer',
    minimum: 30,
    maximum: 1825,
    description: 'Horizon of predicted_clv, in days. Integer 30–1825 (five years); default 365.',
  },
  analytics_concurrency: {
    type: 'integer',
    minimum: 1,
    maximum: 16,
    description:
      'Expensive operations of the workspace (segment calculations, intelligence summaries, model fits) that may run at once on each service process; one more is 429 with Retry-After. Integer 1–16; default 2.',
  },
} as const;

const retentionField = (what: string, byDefault: string) => ({
  anyOf: [
    { type: 'integer', minimum: 1, maximum: MAX_RETENTION_DAYS },
    { type: 'string', const: 'forever' },
  ],
  description: `${what} Days 1–36,500, or \`forever\`; default ${byDefault}.`,
});

/** Each retention setting: what it removes, counted from when the row was written. */
const RETENTION_FIELDS: Record<RetentionKey, object> = {
  events_days: retentionField(
    'Events (with their typed properties and the record of the profile each was applied to) are removed this many days after they were received.',
    '`forever`',
  ),
  dead_letters_days: retentionField(
    'Dead letters, and the events they hold, are removed this many days after the event was set aside.',
    '`forever`',
  ),
  outbox_days: retentionField(
    'Settled outbox facts (read by every consumer) and settled webhook deliveries (delivered, failed, dead, cancelled or erased) with their attempts are removed this many days after they were written.',
    '30',
  ),
  segment_changes_days: retentionField(
    'Segment entries and exits (the change log; current memberships stay) are removed this many days after they happened.',
    '`forever`',
  ),
  lineage_days: retentionField(
    'Lineage (field-level changes of profiles) is removed this many days after the change was recorded.',
    '`forever`',
  ),
  audit_days: retentionField('Audit log entries are removed this many days after they were written.', '400'),
};

const CONSENT_DEFAULT_FIELD = {
  type: 'string',
  enum: ['granted', 'denied'],
  description:
    'What a profile with no recorded choice for a consent category counts as, for webhook subscriptions that name the category: `granted` (as Segment does) or `denied`. Default `granted`.',
} as const;

const withDefault = (schema: object, value: unknown): TSchema => Type.Unsafe({ ...schema, default: value });

export const RateLimitsSchema = Type.Object(
  {
    requests_per_minute: Type.Unsafe<number>(
      withDefault(FIELDS.requests_per_minute, DEFAULT_SETTINGS.rate_limits.requests_per_minute),
    ),
    batch_events_per_minute: Type.Unsafe<number>(
      withDefault(FIELDS.batch_events_per_minute, DEFAULT_SETTINGS.rate_limits.batch_events_per_minute),
    ),
  },
  { additionalProperties: false, description: 'Per-key rate limits (docs/api.md, "Rate limits").' },
);

export const RetentionSchema = Type.Object(
  Object.fromEntries(
    RETENTION_KEYS.map((k) => [
      k,
      Type.Unsafe<RetentionDays>(withDefault(RETENTION_FIELDS[k], DEFAULT_SETTINGS.retention[k])),
    ]),
  ) as unknown as Record<RetentionKey, TSchema>,
  {
    additionalProperties: false,
    description:
      'How long each kind of row is kept (docs/api.md, "Retention"); removed by the retention sweep.',
  },
);

/** The effective settings of a workspace: every key present, defaults filled in. */
export const WorkspaceSettingsSchema = Type.Object(
  {
    rate_limits: RateLimitsSchema,
    junk_identifiers: Type.Unsafe<string[]>(withDefault(FIELDS.junk_identifiers, [])),
    merge_cap: Type.Unsafe<number>(withDefault(FIELDS.merge_cap, DEFAULT_SETTINGS.merge_cap)),
    churn_threshold: Type.Unsafe<number>(
      withDefault(FIELDS.churn_threshold, DEFAULT_SETTINGS.churn_threshold),
    ),
    discount_rate: Type.Unsafe<number>(withDefault(FIELDS.discount_rate, DEFAULT_SETTINGS.discount_rate)),
    clv_horizon_days: Type.Unsafe<number>(
      withDefault(FIELDS.clv_horizon_days, DEFAULT_SETTINGS.clv_horizon_days),
    ),
    analytics_concurrency: Type.Unsafe<number>(
      withDefault(FIELDS.analytics_concurrency, DEFAULT_SETTINGS.analytics_concurrency),
    ),
    retention: Type.Unsafe<Record<RetentionKey, RetentionDays>>(RetentionSchema),
    consent_default: Type.Unsafe<ConsentDefault>(
      withDefault(CONSENT_DEFAULT_FIELD, DEFAULT_SETTINGS.consent_default),
    ),
  },
  { additionalProperties: false, description: 'The workspace settings in effect (defaults filled in).' },
);

export type WorkspaceSettings = Static<typeof WorkspaceSettingsSchema>;

/** A setting in a PATCH: its value, or null to go back to the default (JSON merge patch, RFC 7396). */
const orNull = <T>(field: { type: string }) =>
  Type.Optional(Type.Unsafe<T | null>({ ...field, type: [field.type, 'null'] }));

const RateLimitsPatch = Type.Object(
  {
    requests_per_minute: orNull<number>(FIELDS.requests_per_minute),
    batch_events_per_minute: orNull<number>(FIELDS.batch_events_per_minute),
  },
  { additionalProperties: false },
);

/** A retention setting in a PATCH: days, `forever`, or null for the default. */
const retentionOrNull = (k: RetentionKey) =>
  Type.Optional(Type.Unsafe<RetentionDays | null>({ anyOf: [RETENTION_FIELDS[k], { type: 'null' }] }));

const RetentionPatch = Type.Object(
  Object.fromEntries(RETENTION_KEYS.map((k) => [k, retentionOrNull(k)])) as unknown as Record<
    RetentionKey,
    TSchema
  >,
  { additionalProperties: false },
);

/**
 * PATCH /tenant/settings and `cdp settings set`: any subset of the settings (and of `rate_limits`);
 * `null` restores a setting's default. Unknown keys are refused.
 */
export const SettingsPatchSchema = Type.Object(
  {
    rate_limits: Type.Optional(
      Type.Unsafe<Static<typeof RateLimitsPatch> | null>({
        ...RateLimitsPatch,
        type: ['object', 'null'],
        description: 'Any of the two limits; null restores both defaults.',
      }),
    ),
    junk_identifiers: orNull<string[]>(FIELDS.junk_identifiers),
    merge_cap: orNull<number>(FIELDS.merge_cap),
    churn_threshold: orNull<number>(FIELDS.churn_threshold),
    discount_rate: orNull<number>(FIELDS.discount_rate),
    clv_horizon_days: orNull<number>(FIELDS.clv_horizon_days),
    analytics_concurrency: orNull<number>(FIELDS.analytics_concurrency),
    retention: Type.Optional(
      Type.Unsafe<Partial<Record<RetentionKey, RetentionDays | null>> | null>({
        ...RetentionPatch,
        type: ['object', 'null'],
        description: 'Any of the retention settings; null restores every default.',
      }),
    ),
    consent_default: Type.Optional(
      Type.Unsafe<ConsentDefault | null>({ anyOf: [CONSENT_DEFAULT_FIELD, { type: 'null' }] }),
    ),
  },
  {
    additionalProperties: false,
    description:
      'Any subset of the settings, nested for `rate_limits`; a value of `null` restores the default. Arrays replace.',
  },
);

export type SettingsPatch = Static<typeof SettingsPatchSchema>;

/** The schema of one setting (for reading stored values defensively). */
export const FIELD_SCHEMAS = Object.fromEntries(
  [
    ...Object.entries(FIELDS),
    ...Object.entries(RETENTION_FIELDS),
    ['consent_default', CONSENT_DEFAULT_FIELD],
  ].map(([k, v]) => [k, Type.Unsafe(v as object)]),
) as unknown as Record<keyof typeof FIELDS | RetentionKey | 'consent_default', TSchema>;
