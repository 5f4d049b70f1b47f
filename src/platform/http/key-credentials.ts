import type { FastifyContextConfig } from 'fastify';
import { AppError } from '../errors';
import type { MaybePromise, Principal, PrincipalResolver } from './principal';

/** What a key store knows about an active key (implemented by modules/api-keys). */
export interface KeyGrant {
  id: string;
  /** The key's name (what the audit trail shows beside its id); set by the key store. */
  name?: string;
  workspaceId: string;
  scopes: readonly string[];
  allowedDomains: readonly string[];
  workspaceSettings: Readonly<Record<string, unknown>>;
}

/** The port the key resolvers need: raw secret → the active key, or null (synchronous from a cache). */
export interface KeyLookup {
  resolve(rawSecret: string): MaybePromise<KeyGrant | null>;
}

const invalidKey = (message = 'API key is not valid for any workspace') =>
  new AppError('INVALID_TENANT_KEY', message);

function grantOf(keys: KeyLookup, raw: string, kind: Principal['kind']): MaybePromise<Principal> {
  const key = keys.resolve(raw);
  return key instanceof Promise ? key.then((k) => asPrincipal(k, kind)) : asPrincipal(key, kind);
}

/**
 * The principals made of each grant, by kind: a key store that hands out the same grant object for a
 * warm key (modules/api-keys) gets the same principal back, instead of a copy per request.
 */
const principals = new WeakMap<KeyGrant, Partial<Record<Principal['kind'], Principal>>>();

function asPrincipal(key: KeyGrant | null, kind: Principal['kind']): Principal {
  if (!key) throw invalidKey();
  const byKind = principals.get(key) ?? {};
  const known = byKind[kind];
  if (known) return known;
  const made = Object.freeze({ ...key, kind, keyId: key.id, keyName: key.name });
  byKind[kind] = made;
  principals.set(key, byKind);
  return made;
}

/** Write keys (Segment's two ways of sending a key) are accepted where the route ingests, only. */
const ingestRoutes = (route: FastifyContextConfig) => route.auth === 'ingest';

/** `X-API-Key: <key>`: every key-protected route. */
export function apiKeyHeader(keys: KeyLookup): PrincipalResolver {
  return {
    name: 'x-api-key',
    stage: 'headers',
    hint: 'X-API-Key header',
    resolve(req) {
      const raw = req.headers['x-api-key'];
      if (raw === undefined || raw === '') return null;
      if (typeof raw !== 'string') throw invalidKey('send exactly one X-API-Key header');
      return grantOf(keys, raw, 'api_key');
    },
  };
}

const BASIC = /^Basic +([A-Za-z0-9+/]+={0,2}) *$/i;

/**
 * `Authorization: Basic base64(<key>:)`, the key as user name and an empty password (Segment's
 * HTTP API). Other schemes are not a key and are left alone.
 */
export function basicAuthWriteKey(keys: KeyLookup): PrincipalResolver {
  return {
    name: 'basic-auth',
    stage: 'headers',
    hint: 'HTTP Basic user name',
    appliesTo: ingestRoutes,
    resolve(req) {
      const header = req.headers.authorization;
      if (typeof header !== 'string' || !/^Basic(\s|$)/i.test(header)) return null;
      const encoded = BASIC.exec(header)?.[1];
      const decoded = encoded ? Buffer.from(encoded, 'base64').toString('utf8') : '';
      const colon = decoded.indexOf(':');
      if (colon <= 0 || colon !== decoded.length - 1) {
        throw invalidKey('send the key as the Basic user name, with an empty password');
      }
      return grantOf(keys, decoded.slice(0, colon), 'write_key');
    },
  };
}

/**
 * `writeKey` in the JSON body (Segment's browser library): the event's own field, or for a batch
 * (an array) the field of its items, all the same key. The field is taken out of the body: it is a
 * credential, not event data, so it is neither validated nor stored.
 */
export function bodyWriteKey(keys: KeyLookup): PrincipalResolver {
  return {
    name: 'body-write-key',
    stage: 'body',
    hint: 'writeKey in the body',
    appliesTo: ingestRoutes,
    resolve(req) {
      const raw = takeWriteKey(req.body);
      return raw === null ? null : grantOf(keys, raw, 'write_key');
    },
  };
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Removes every `writeKey` of the body; answers the key, null if none, or throws if they differ. */
export function takeWriteKey(body: unknown): string | null {
  const holders = Array.isArray(body) ? body.filter(isRecord) : isRecord(body) ? [body] : [];
  let found: string | null = null;
  for (const holder of holders) {
    if (!Object.hasOwn(holder, 'writeKey')) continue;
    const value = holder.writeKey;
    delete holder.writeKey;
    if (typeof value !== 'string' || value === '' || (found !== null && value !== found)) {
      throw invalidKey('writeKey must be one key, the same in every event');
    }
    found = value;
  }
  return found;
}

/**
 * `?writeKey=` in the query: the settings document RudderStack's browser library fetches at load
 * (`/sourceConfig/?writeKey=…`) carries the key there. Only on routes that say so (`keyInUrl`), and
 * only when no header carries a credential: the library also sends its key as Basic auth, which is
 * then the one checked (a query field is part of the URL, logged and cached by proxies: the weaker
 * place for a credential, so the header wins rather than both being compared).
 */
export function urlWriteKey(keys: KeyLookup): PrincipalResolver {
  return {
    name: 'url-write-key',
    stage: 'headers',
    hint: 'writeKey in the query',
    appliesTo: (route) => route.keyInUrl === true,
    resolve(req) {
      if (req.headers['x-api-key'] !== undefined || req.headers.authorization !== undefined) return null;
      const raw = (req.query as Record<string, unknown> | undefined)?.writeKey;
      if (raw === undefined || raw === '') return null;
      if (typeof raw !== 'string') throw invalidKey('send exactly one writeKey');
      return grantOf(keys, raw, 'write_key');
    },
  };
}

/** The ways to send a key, in the order they are read. */
export function keyResolvers(keys: KeyLookup): PrincipalResolver[] {
  return [apiKeyHeader(keys), basicAuthWriteKey(keys), urlWriteKey(keys), bodyWriteKey(keys)];
}
