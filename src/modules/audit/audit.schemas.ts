import { Type } from 'typebox';

const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);

/** Filters of GET /tenant/audit-log, with their limits (docs/api.md, "Audit log"). */
export const AuditLogFilters = {
  action: Type.Optional(
    Type.String({
      maxLength: 100,
      pattern: '^[a-z][a-z_]*(\\.[a-z][a-z_]*)+$',
      description: 'Only entries of this action, e.g. `apikey.create`.',
    }),
  ),
  principal: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 200,
      description:
        'Only entries of this principal: a key id (`key_…`: everything done with the key, through its console sessions too) or a console session id (`ses_…`).',
    }),
  ),
  since: Type.Optional(
    Type.String({
      format: 'date-time',
      maxLength: 40,
      description: 'Entries at or after this time (ISO 8601).',
    }),
  ),
  until: Type.Optional(
    Type.String({ format: 'date-time', maxLength: 40, description: 'Entries before this time (ISO 8601).' }),
  ),
};

export const AuditEntrySchema = Type.Object({
  id: Type.String({ description: 'aud_… (time-ordered).' }),
  time: Type.String({ format: 'date-time' }),
  action: Type.String({ description: 'A stable dotted name: `apikey.create`, `profile.erase`, …' }),
  principal: Type.Union(
    [
      Type.Object({
        type: Type.Literal('api_key'),
        key_id: Nullable(Type.String()),
        key_name: Nullable(Type.String()),
      }),
      Type.Object({
        type: Type.Literal('session'),
        session_id: Nullable(Type.String()),
        key_id: Nullable(Type.String()),
        key_name: Nullable(Type.String()),
      }),
      Type.Object({ type: Type.Literal('operator') }),
    ],
    { description: 'Who acted: an API key, a console session (with its key), or the operator token.' },
  ),
  target: Type.Object({
    type: Type.String({ description: '`api_key`, `profile`, `segment`, `webhook`, `workspace`, …' }),
    id: Nullable(Type.String()),
  }),
  diff: Type.Unknown({
    description:
      '`{before, after}` (the fields that changed) where the service knows both, else `{request: {body, query}}` as accepted; secrets redacted; `{erased: true}` once the target profile is erased; null for a refused request.',
  }),
  request_id: Type.String({ description: 'The request’s `X-Request-Id`.' }),
  client_ip: Nullable(Type.String()),
  user_agent: Nullable(Type.String({ description: 'Cut to 256 characters.' })),
  status: Type.Integer({ description: 'The answer’s HTTP status.' }),
});
