import type { FastifyContextConfig, FastifyRequest } from 'fastify';

/**
 * Who is calling: what the auth hook hands to routes, whatever credential it came from. Routes read
 * it with `principalOf(req)` / `workspaceOf(req)`, never the credential itself.
 */
export interface Principal {
  /**
   * `api_key`: X-API-Key. `write_key`: a key sent the Segment way (Basic auth, body `writeKey`).
   * `session`: the console's session cookie (session-cookie.ts), acting with its key's scopes.
   */
  readonly kind: 'api_key' | 'write_key' | 'session';
  /**
   * The acting credential: what rate limits count against and what records name as their source
   * (lineage, an event's `api_key_id`). The key id for both key kinds.
   */
  readonly id: string;
  readonly workspaceId: string;
  readonly keyId?: string;
  /** The key's name, as the audit trail records who acted (both key kinds and sessions). */
  readonly keyName?: string;
  readonly userId?: string;
  /** The console session (ses_…) of a `session` principal. */
  readonly sessionId?: string;
  readonly scopes: readonly string[];
  /** Origin rule: host patterns (platform/http/origins.ts) the credential may be used from; [] = any. */
  readonly allowedDomains: readonly string[];
  /** The workspace's settings as read with the credential (per-workspace rate limits). */
  readonly workspaceSettings: Readonly<Record<string, unknown>>;
}

/**
 * A way to send credentials. The auth hook runs every resolver that applies to the route and admits
 * the request if they found one principal (several must agree). Resolvers of the `headers` stage run
 * before the body is read; `body` ones after it is parsed and before it is validated, and only where
 * `appliesTo` says so (reading an unauthenticated body costs its parse, within the route's limit).
 */
export interface PrincipalResolver {
  readonly name: string;
  readonly stage: 'headers' | 'body';
  /** How to name this credential in "… is required" (e.g. `X-API-Key header`); '' leaves it unnamed. */
  readonly hint: string;
  /** Whether the resolver looks at requests of this route at all; absent: every key-protected route. */
  appliesTo?(route: FastifyContextConfig): boolean;
  /**
   * null when the request carries no credential of this kind. A credential that is there but not
   * valid throws (401 INVALID_TENANT_KEY): a bad credential is never ignored in favour of another.
   * Answers synchronously when it can decide from memory (a warm key): every request of the ingest
   * path goes through here, and each promise and `await` costs it measurable time
   * (docs/benchmarks.md, "The auth path of a warm key").
   */
  resolve(req: FastifyRequest): MaybePromise<Principal | null>;
}

/** A value, or the promise of one: the return type of lookups that are usually answered from memory. */
export type MaybePromise<T> = T | Promise<T>;

/** The principal of a request the auth hook admitted; a route that is not key-protected has none. */
export function principalOf(req: FastifyRequest): Principal {
  const p = req.principal;
  if (!p) throw new Error(`no principal on ${req.method} ${req.routeOptions.url}: is the route public?`);
  return p;
}

export const workspaceOf = (req: FastifyRequest): string => principalOf(req).workspaceId;

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the auth hook on key-protected routes; read it through `principalOf(req)`. */
    principal: Principal | null;
  }
}
