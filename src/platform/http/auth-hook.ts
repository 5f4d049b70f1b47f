import { timingSafeEqual } from 'node:crypto';
import type { FastifyContextConfig, FastifyReply, FastifyRequest } from 'fastify';
import { heldLock } from '../db/data-dir-lock';
import { AppError } from '../errors';
import { CORS_EXPOSE_HEADERS } from './cors';
import { originAllowed, requestHost } from './origins';
import type { MaybePromise, Principal, PrincipalResolver } from './principal';
import { limitFor } from './rate-limit';
import { ACCEPTED_SCOPES, type Requirement, satisfies } from './scopes';
import type { AppDeps } from './types';

/** The token of this process's lock on the embedded database's directory, if it holds one. */
const localToken = (config: AppDeps['config']): string | null =>
  config.databaseUrl ? null : (heldLock(config.dataDir)?.record.token ?? null);

const sameSecret = (a: string, b: string): boolean => {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  return ab.length === bb.length && timingSafeEqual(ab, bb);
};

interface RoutePlan {
  headers: readonly PrincipalResolver[];
  body: readonly PrincipalResolver[];
  /** "X-API-Key header is required", naming every way this route accepts. */
  missing: string;
}

/**
 * Only a JSON body can hold a credential; anything else is refused (401) before it is read. Routes
 * that read JSON under any content type (`anyBodyType`) take any.
 */
const mayCarryJsonBody = (req: FastifyRequest): boolean =>
  (req.routeOptions.config.anyBodyType === true ||
    /^\s*application\/json\s*(;|$)/i.test(req.headers['content-type'] ?? '')) &&
  (req.headers['transfer-encoding'] !== undefined ||
    (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0'));

/**
 * The guard of every route. On key-protected routes the configured principal resolvers (in order)
 * find who is calling, before the body is read where the credential is in the headers; then, in
 * this order: allowed origins, required scope, the standard rate-limit tier. An unauthenticated
 * caller learns nothing about validation, and refused calls cost no parsing (except on routes that
 * accept a key in the body, and only within their body limit).
 */
export function createAuthHooks(deps: AppDeps) {
  const plans = new WeakMap<FastifyContextConfig, RoutePlan>();
  const planOf = (cfg: FastifyContextConfig): RoutePlan => {
    let plan = plans.get(cfg);
    if (!plan) {
      const applying = deps.principals.filter((r) => r.appliesTo?.(cfg) ?? true);
      const hints = applying.map((r) => r.hint).filter((h) => h !== '');
      const named = hints.length > 1 ? `${hints.slice(0, -1).join(', ')} or ${hints.at(-1)}` : hints[0];
      plan = {
        headers: applying.filter((r) => r.stage === 'headers'),
        body: applying.filter((r) => r.stage === 'body'),
        missing: `${named ?? 'a credential'} is required`,
      };
      plans.set(cfg, plan);
    }
    return plan;
  };

  /** Origin, scope, then the standard tier: the checks every principal goes through. */
  async function admit(req: FastifyRequest, reply: FastifyReply, who: Principal, need: Requirement) {
    const cfg = req.routeOptions.config;
    const host = requestHost(req.headers.origin, req.headers.referer);
    if (!originAllowed(who.allowedDomains, host)) {
      throw new AppError('ORIGIN_NOT_ALLOWED', 'this key is not allowed from this origin');
    }
    // A browser key on a CORS route: let the page read the answer (errors included) and its limits.
    if (who.allowedDomains.length > 0 && cfg.cors && req.headers.origin) {
      void reply.headers({
        'access-control-allow-origin': req.headers.origin,
        'access-control-expose-headers': CORS_EXPOSE_HEADERS,
        vary: 'Origin',
      });
    }
    if (!satisfies(who.scopes, need)) {
      // Names the scopes a key can be given, never the route's internal requirement.
      throw new AppError(
        'INSUFFICIENT_SCOPE',
        `this operation needs a key with the ${ACCEPTED_SCOPES[need].join(' or ')} scope; this key has: ${who.scopes.join(', ') || 'none'}`,
      );
    }
    req.principal = who;

    if ((cfg.rateTier ?? 'standard') === 'standard') {
      const limit = limitFor(who.workspaceSettings, 'standard');
      const d = await deps.limits.consume(who.id, 'standard', 1, limit);
      applyRateHeaders(reply, d);
      if (!d.allowed) throw rateLimited(d.resetSeconds);
    }
  }

  return {
    async onRequest(req: FastifyRequest, reply: FastifyReply): Promise<void> {
      const cfg = req.routeOptions.config;
      const auth = cfg.auth;
      if (auth === undefined || auth === 'public') return;

      if (auth === 'operator') {
        const token = deps.config.operatorToken;
        // Without a configured token the operator API does not exist.
        if (!token) throw new AppError('NOT_FOUND', 'not found');
        const header = req.headers.authorization ?? '';
        const given = header.startsWith('Bearer ') ? header.slice(7) : '';
        if (!sameSecret(given, token))
          throw new AppError('INVALID_OPERATOR_TOKEN', 'operator token missing or wrong');
        return;
      }
      if (auth === 'local') {
        const token = localToken(deps.config);
        if (!token) throw new AppError('NOT_FOUND', 'not found');
        const header = req.headers.authorization ?? '';
        if (!sameSecret(header.startsWith('Bearer ') ? header.slice(7) : '', token))
          throw new AppError('INVALID_OPERATOR_TOKEN', 'local token missing or wrong');
        return;
      }

      const plan = planOf(cfg);
      const found = resolveAll(plan.headers, req, null);
      const who: Principal | null = found instanceof Promise ? await found : found;
      if (who) return admit(req, reply, who, auth);
      // The key may be in the body: decided once it is parsed (preValidation).
      if (plan.body.length > 0 && mayCarryJsonBody(req)) return;
      throw new AppError('MISSING_API_KEY', plan.missing);
    },

    /** Body credentials: after parsing, before validation (a batch route's own hooks run after). */
    async preValidation(req: FastifyRequest, reply: FastifyReply): Promise<void> {
      const cfg = req.routeOptions.config;
      const auth = cfg.auth;
      if (auth === undefined || auth === 'public' || auth === 'operator' || auth === 'local') return;
      const plan = planOf(cfg);
      if (plan.body.length === 0) return;
      const admitted = req.principal;
      const found = resolveAll(plan.body, req, admitted);
      const who: Principal | null = found instanceof Promise ? await found : found;
      if (admitted) return;
      if (!who) throw new AppError('MISSING_API_KEY', plan.missing);
      return admit(req, reply, who, auth);
    },
  };
}

/**
 * Runs every resolver (each may refuse a bad credential of its own kind) and answers the one
 * principal they found. Credentials of different keys in one request are refused: no precedence
 * rule could tell which one the caller meant. Synchronous while the resolvers are (a warm key):
 * only a resolver that has to wait makes the rest wait with it.
 */
function resolveAll(
  resolvers: readonly PrincipalResolver[],
  req: FastifyRequest,
  already: Principal | null,
): MaybePromise<Principal | null> {
  let found = already;
  for (let i = 0; i < resolvers.length; i++) {
    const p = resolvers[i]!.resolve(req);
    if (p instanceof Promise) return p.then((q) => resolveAll(resolvers.slice(i + 1), req, agree(found, q)));
    found = agree(found, p);
  }
  return found;
}

function agree(found: Principal | null, p: Principal | null): Principal | null {
  if (!p) return found;
  if (found && (found.id !== p.id || found.workspaceId !== p.workspaceId)) {
    throw new AppError('INVALID_TENANT_KEY', 'the request carries credentials of different keys');
  }
  return found ?? p;
}

export function applyRateHeaders(
  reply: FastifyReply,
  d: { limit: number; remaining: number; resetSeconds: number },
): void {
  void reply.headers({
    'ratelimit-limit': String(d.limit),
    'ratelimit-remaining': String(d.remaining),
    'ratelimit-reset': String(d.resetSeconds),
  });
}

export const rateLimited = (retryAfter: number): AppError =>
  new AppError('RATE_LIMITED', `rate limit exceeded; retry in ${retryAfter} s`, {
    headers: { 'retry-after': String(retryAfter) },
  });
