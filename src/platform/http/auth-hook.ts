import { timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { originAllowed, requestHost } from '../../modules/api-keys/domains';
import { AppError } from '../errors';
import { CORS_EXPOSE_HEADERS } from './cors';
import { limitFor } from './rate-limit';
import { satisfies } from './scopes';
import type { AppDeps } from './types';

const sameSecret = (a: string, b: string): boolean => {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  return ab.length === bb.length && timingSafeEqual(ab, bb);
};

/**
 * The onRequest hook that guards every route, before its body is even read: key → workspace and
 * scopes, allowed origins, required scope, then the standard rate-limit tier. Order matters: an
 * unauthenticated caller learns nothing about validation, and refused calls cost no parsing.
 */
export function createAuthHook(deps: AppDeps) {
  return async function authenticate(req: FastifyRequest, reply: FastifyReply): Promise<void> {
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

    const raw = req.headers['x-api-key'];
    if (raw === undefined || raw === '')
      throw new AppError('MISSING_API_KEY', 'X-API-Key header is required');
    if (typeof raw !== 'string')
      throw new AppError('INVALID_TENANT_KEY', 'send exactly one X-API-Key header');
    const key = await deps.keys.resolve(raw);
    if (!key) throw new AppError('INVALID_TENANT_KEY', 'API key is not valid for any workspace');

    const host = requestHost(req.headers.origin, req.headers.referer);
    if (!originAllowed(key.allowedDomains, host)) {
      throw new AppError('ORIGIN_NOT_ALLOWED', 'this key is not allowed from this origin');
    }
    // A browser key on a CORS route: let the page read the answer (errors included) and its limits.
    if (key.allowedDomains.length > 0 && cfg.cors && req.headers.origin) {
      void reply.headers({
        'access-control-allow-origin': req.headers.origin,
        'access-control-expose-headers': CORS_EXPOSE_HEADERS,
        vary: 'Origin',
      });
    }
    if (!satisfies(key.scopes, auth)) {
      throw new AppError(
        'INSUFFICIENT_SCOPE',
        `this operation needs one of the scopes allowed for "${auth}"`,
      );
    }
    req.apiKey = key;

    if ((cfg.rateTier ?? 'standard') === 'standard') {
      const limit = limitFor(key.workspaceSettings, 'standard');
      const d = await deps.limits.consume(key.id, 'standard', 1, limit);
      applyRateHeaders(reply, d);
      if (!d.allowed) throw rateLimited(d.resetSeconds);
    }
  };
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
