import type { FastifyContextConfig, RouteHandlerMethod, RouteOptions } from 'fastify';
import { type AuditDeclaration, checkDeclaration } from './audit';
import type { Tier } from './rate-limit';
import type { RouteAuth } from './scopes';
import type { App } from './types';

/** One route of the app as the route test matrix and the OpenAPI test see it. */
export interface RouteInfo {
  method: string;
  /** Fastify's pattern, e.g. `/tenant/apikeys/:key_id`. */
  url: string;
  auth: RouteAuth;
  rateTier: Tier | 'none';
  cors: boolean;
  /** Path parameter names, in order. */
  params: string[];
  /** Left out of the OpenAPI document (`schema.hide`). */
  hidden: boolean;
  /** The OPTIONS route answering CORS preflights for a `cors: true` route. */
  preflight: boolean;
  /** The audit entry the route writes, or why none (`config.audit`); null when it declares nothing. */
  audit: AuditDeclaration | null;
}

export interface RouteRegistry {
  /** Every route but HEAD twins and the /docs pages, in registration order. */
  readonly routes: readonly RouteInfo[];
  /** The onRoute hook: enforces `config.auth`, records the route, fills documentation defaults. */
  onRoute(route: RouteOptions): void;
  /** Methods served on a concrete path (for 405 answers); empty when no route matches it. */
  allowedMethods(path: string): string[];
}

const isDocs = (url: string) => url === '/docs' || url.startsWith('/docs/');
const escapeRegex = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function patternOf(url: string): RegExp {
  const parts = url.split('/').map((seg) => {
    if (seg === '*') return '.*';
    if (seg.startsWith(':')) return '[^/]+';
    return escapeRegex(seg);
  });
  return new RegExp(`^${parts.join('/')}$`);
}

const KEY_AUTH = new Set<RouteAuth>(['read', 'write', 'admin', 'ingest']);
const errorRef = (description: string) => ({ $ref: 'ErrorEnvelope#', description });

/** The OpenAPI security alternatives of a route: ingest routes also take Basic auth (key-credentials.ts). */
export function securityOf(auth: RouteAuth): Array<Record<string, string[]>> {
  if (auth === 'public' || auth === 'local') return [];
  if (auth === 'operator') return [{ operatorToken: [] }];
  return auth === 'ingest' ? [{ apiKey: [] }, { basicAuth: [] }] : [{ apiKey: [] }];
}

/**
 * Documentation every route shares, so no route can forget it: `security` follows `config.auth`,
 * and each error status the route can produce points at the one ErrorEnvelope schema. A route's
 * own declarations win. The envelope schema lists every field the error handler writes, so
 * serializing errors through it changes nothing.
 */
function withSharedDocs(
  schema: Record<string, unknown> | undefined,
  auth: RouteAuth,
): Record<string, unknown> {
  const s: Record<string, unknown> = { ...(schema ?? {}) };
  const keyRoute = KEY_AUTH.has(auth);
  s.security ??= securityOf(auth);
  const errors: Record<string, object> = {};
  if (s.body || s.querystring || s.params) errors[400] = errorRef('Invalid request (`VALIDATION_ERROR`, …).');
  if (keyRoute) {
    errors[401] = errorRef('Missing, unknown or revoked API key.');
    errors[403] = errorRef('The key lacks the scope, or is not allowed from this origin.');
  }
  if (auth === 'operator') {
    errors[401] = errorRef('Operator token missing or wrong.');
    errors[404] = errorRef('The operator API is disabled (no CDP_OPERATOR_TOKEN).');
  }
  if (s.params) errors[404] = errorRef('No such resource in this workspace.');
  if (s.body) {
    errors[413] = errorRef('Request body too large.');
    errors[415] = errorRef('Request body is not application/json.');
  }
  if (keyRoute) errors[429] = errorRef('Rate limit exceeded; see `Retry-After`.');
  errors['5xx'] = errorRef('Internal error or storage unavailable.');
  s.response = { ...errors, ...((s.response as Record<string, unknown> | undefined) ?? {}) };
  return s;
}

/**
 * Every route passes through here as it is registered (app.ts installs `onRoute`), which makes the
 * recorded list complete by construction: the route test matrix and the OpenAPI test iterate it,
 * so a new route is covered the moment it exists.
 */
export function createRouteRegistry(app: App, preflight: RouteHandlerMethod): RouteRegistry {
  const routes: RouteInfo[] = [];
  const patterns: Array<{ re: RegExp; method: string }> = [];

  return {
    routes,
    onRoute(route) {
      route.config = route.config ?? {};
      const cfg = route.config as FastifyContextConfig;
      // Every route must say who may call it, so a forgotten guard fails at start, not in production.
      if (cfg.auth === undefined) {
        if (isDocs(route.url)) cfg.auth = 'public';
        else throw new Error(`route ${route.method} ${route.url} declares no auth requirement`);
      }
      if (isDocs(route.url)) return;
      if (cfg.audit !== undefined) checkDeclaration(`${String(route.method)} ${route.url}`, cfg.audit);

      const methods = (Array.isArray(route.method) ? route.method : [route.method]).map((m) =>
        m.toUpperCase(),
      );
      const schema = route.schema as Record<string, unknown> | undefined;
      const hidden = schema?.hide === true;
      if (!hidden) route.schema = withSharedDocs(schema, cfg.auth);

      for (const method of methods) {
        patterns.push({ re: patternOf(route.url), method });
        // Fastify adds a HEAD twin to every GET; it shares the GET's guard, so it is not listed.
        if (method === 'HEAD') continue;
        routes.push({
          method,
          url: route.url,
          auth: cfg.auth,
          rateTier: cfg.rateTier ?? 'standard',
          cors: cfg.cors === true,
          params: [...route.url.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]!),
          hidden,
          preflight: cfg.preflight === true,
          audit: cfg.audit ?? null,
        });
      }

      const corsMethods = methods.filter((m) => m === 'POST' || m === 'GET');
      if (cfg.cors && corsMethods.length > 0 && !app.hasRoute({ method: 'OPTIONS', url: route.url })) {
        app.route({
          method: 'OPTIONS',
          url: route.url,
          config: { auth: 'public', rateTier: 'none', preflight: true, corsMethods: corsMethods.join(', ') },
          schema: { hide: true },
          handler: preflight,
        });
      }
    },
    allowedMethods(path) {
      const found = new Set<string>();
      for (const p of patterns) if (p.re.test(path)) found.add(p.method);
      return [...found];
    },
  };
}
