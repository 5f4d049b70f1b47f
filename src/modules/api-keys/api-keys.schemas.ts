import { Type } from 'typebox';
import { SCOPES } from '../../platform/http/scopes';

/**
 * An `allowed_domains` entry: a host name or a `*.` wildcard (matched by platform/http/origins.ts).
 */
export const DOMAIN_PATTERN =
  '^(\\*\\.)?([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\\.)*[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$';

/**
 * Active keys per workspace. Keys are few by nature (one per server, per site, per integration):
 * the limit leaves room for that while keeping what one tenant adds to every process's preflight
 * index, and to the key list an admin pages through, within bounds.
 */
export const KEYS_PER_WORKSPACE = 100;
/**
 * Domains of one key. Wildcards cover every subdomain, so a site needs one or two entries; the
 * limit bounds the origin check of each request made with the key (linear in its list).
 */
export const DOMAINS_PER_KEY = 50;

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
        maxItems: DOMAINS_PER_KEY,
        description: `Host names or \`*.example.com\` wildcards (at most ${DOMAINS_PER_KEY}); when set, requests must come from a matching Origin.`,
      }),
    ),
  },
  { additionalProperties: false },
);
