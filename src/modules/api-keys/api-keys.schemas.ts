import { Type } from 'typebox';
import { SCOPES } from '../../platform/http/scopes';

/**
 * An `allowed_domains` entry: a host name or a `*.` wildcard (matched by platform/http/origins.ts).
 */
export const DOMAIN_PATTERN =
  '^(\\*\\.)?([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\\.)*[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$';

export const ScopeSchema = Type.Enum([...SCOPES], {
  description: 'admin ⊇ editor ⊇ viewer; admin may also ingest; ingest only ingests.',
});

export const ApiKeySchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  scopes: Type.Array(Type.String()),
  allowed_domains: Type.Array(Type.String()),
  created_at: Type.String({ format: 'date-time' }),
});

export const ApiKeyCreatedSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  scopes: Type.Array(Type.String()),
  allowed_domains: Type.Array(Type.String()),
  created_at: Type.String({ format: 'date-time' }),
  api_key: Type.String({ description: 'The secret. Shown in this response only; store it now.' }),
});

export const CreateApiKeyBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    scopes: Type.Array(ScopeSchema, { minItems: 1, maxItems: 4, uniqueItems: true }),
    allowed_domains: Type.Optional(
      Type.Array(Type.String({ maxLength: 253, pattern: DOMAIN_PATTERN }), {
        maxItems: 100,
        description:
          'Host names or `*.example.com` wildcards; when set, requests must come from a matching Origin.',
      }),
    ),
  },
  { additionalProperties: false },
);
