import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors';
import { hostMatches, requestHost } from './origins';

/**
 * CORS for browser ingestion (contract §2). Only routes with `config.cors: true` (the ingest
 * endpoints) get a preflight answer; the route registry adds an OPTIONS route beside each of them.
 * A preflight carries no key, so it is answered for any origin that some active key allows; the
 * real request is then checked against its own key's `allowed_domains` by the auth hook.
 */
export const PREFLIGHT_MAX_AGE_SECONDS = 600;
export const CORS_ALLOW_HEADERS = 'Content-Type, X-API-Key';
/** Browsers hide response headers from scripts unless listed here. */
export const CORS_EXPOSE_HEADERS = 'RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Retry-After';

export interface OriginPolicy {
  /** True when some active key's allowed_domains matches this host. */
  allows(host: string): Promise<boolean>;
}

/** Every origin pattern of every active key (the api-keys module's store, wired in app.ts). */
export type OriginPatternSource = () => Promise<readonly string[]>;

/**
 * Preflights are unauthenticated, so they must not cost a query each: the union of patterns is
 * cached. A matching origin is served from the cache for `hitTtlMs`; an origin that does not match
 * re-reads the patterns at most every `missRefreshMs`, so a key created a moment ago works within a
 * second while a flood of foreign origins costs at most one query per second. A revoked key's
 * domain may answer preflights until the cache ages out; the real request still fails on its key.
 */
export function createOriginPolicy(
  loadPatterns: OriginPatternSource,
  opts: { hitTtlMs?: number; missRefreshMs?: number; now?: () => number } = {},
): OriginPolicy {
  const hitTtlMs = opts.hitTtlMs ?? 30_000;
  const missRefreshMs = opts.missRefreshMs ?? 1_000;
  const now = opts.now ?? Date.now;
  let patterns: readonly string[] = [];
  let loadedAt = Number.NEGATIVE_INFINITY;
  let loading: Promise<void> | null = null;

  const refresh = (): Promise<void> => {
    loading ??= loadPatterns()
      .then((p) => {
        patterns = p;
        loadedAt = now();
      })
      .finally(() => {
        loading = null;
      });
    return loading;
  };
  const matches = (host: string) => patterns.some((p) => hostMatches(host, p));

  return {
    async allows(host) {
      if (now() - loadedAt > hitTtlMs) await refresh();
      if (matches(host)) return true;
      if (now() - loadedAt > missRefreshMs) {
        await refresh();
        return matches(host);
      }
      return false;
    },
  };
}

/** Handler of the OPTIONS routes the registry adds beside `cors: true` routes. */
export function createPreflightHandler(policy: OriginPolicy) {
  return async function preflight(req: FastifyRequest, reply: FastifyReply): Promise<void> {
    // Caches must not serve one origin's answer to another, refusals included.
    void reply.header('vary', 'Origin');
    const origin = req.headers.origin;
    const host = typeof origin === 'string' ? requestHost(origin, undefined) : null;
    if (!origin || host === null || !(await policy.allows(host))) {
      throw new AppError('ORIGIN_NOT_ALLOWED', 'this origin is not allowed by any API key');
    }
    await reply
      .code(204)
      .headers({
        'access-control-allow-origin': origin,
        'access-control-allow-methods': 'POST',
        'access-control-allow-headers': CORS_ALLOW_HEADERS,
        'access-control-max-age': String(PREFLIGHT_MAX_AGE_SECONDS),
      })
      .send();
  };
}
