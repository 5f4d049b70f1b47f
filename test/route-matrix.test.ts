import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app';
import type { RouteInfo } from '../src/platform/http/route-registry';
import { ACCEPTED_SCOPES, type Requirement, SCOPES } from '../src/platform/http/scopes';
import { expectAuthorized, expectError } from './expect-error';
import { startTestService, type TestWorkspace } from './harness';
import { FIXTURES } from './route-matrix.fixtures';

/**
 * The shared route test matrix: every route of the real app, as recorded when it
 * was registered, against no key, unknown, malformed and revoked keys, every scope, and another
 * workspace's ids. A new route is in the matrix the moment it exists.
 */
const OPERATOR_TOKEN = `op_${randomBytes(24).toString('hex')}`;
const svc = await startTestService({ CDP_OPERATOR_TOKEN: OPERATOR_TOKEN });
afterAll(async () => svc.close());

const routes = svc.app.routeList;
const KEY_AUTH = Object.keys(ACCEPTED_SCOPES) as Requirement[];
const isKeyRoute = (r: RouteInfo): r is RouteInfo & { auth: Requirement } =>
  (KEY_AUTH as string[]).includes(r.auth);
const keyRoutes = routes.filter(isKeyRoute);
const paramRoutes = keyRoutes.filter((r) => r.params.length > 0);
const operatorRoutes = routes.filter((r) => r.auth === 'operator');
const localRoutes = routes.filter((r) => r.auth === 'local');
const publicRoutes = routes.filter((r) => r.auth === 'public' && !r.preflight);

/** describe.each rows titled "METHOD /url". */
const titled = <R extends RouteInfo>(list: R[]) => list.map((r) => [`${r.method} ${r.url}`, r] as const);

/** The route's pattern with every parameter filled with an id that exists nowhere. */
const placeholderUrl = (r: RouteInfo) => r.url.replace(/:[A-Za-z0-9_]+/g, 'matrix_nope');
const patternOf = (url: string) => new RegExp(`^${url.replace(/:[A-Za-z0-9_]+/g, '[^/?]+')}(\\?.*)?$`);

let other: TestWorkspace;
const keys = {} as Record<(typeof SCOPES)[number], string>;
let revokedKey: string;

beforeAll(async () => {
  other = await svc.newWorkspace('matrix-other');
  for (const scope of SCOPES) keys[scope] = await svc.ws.key([scope]);
  const made = await svc.call('POST', '/tenant/apikeys', { body: { name: 'to revoke', scopes: ['admin'] } });
  revokedKey = made.body.data.api_key;
  expect((await svc.call('GET', '/tenant/apikeys?limit=1', { key: revokedKey })).status).toBe(200);
  expect((await svc.call('DELETE', `/tenant/apikeys/${made.body.data.id}`)).status).toBe(200);
});

describe('the route list', () => {
  it('holds every route of the app, the key-protected ones included, and no /docs pages', () => {
    const names = routes.map((r) => `${r.method} ${r.url}`);
    expect(names).toEqual(
      expect.arrayContaining(['GET /health', 'GET /tenant/apikeys', 'POST /system/workspaces']),
    );
    expect(names.filter((n) => n.includes(' /docs'))).toEqual([]);
    expect(keyRoutes.length).toBeGreaterThan(0);
  });

  it('gives every route a known auth requirement', () => {
    for (const r of routes) expect(['public', 'operator', 'local', ...KEY_AUTH]).toContain(r.auth);
  });

  it('names only existing routes in the cross-workspace fixtures', () => {
    const known = new Set(paramRoutes.map((r) => `${r.method} ${r.url}`));
    expect(Object.keys(FIXTURES).filter((k) => !known.has(k))).toEqual([]);
  });
});

describe.each(titled(keyRoutes))('%s (API key)', (_name, route) => {
  const url = placeholderUrl(route);
  const accepted = ACCEPTED_SCOPES[route.auth];
  const refused = SCOPES.filter((s) => !accepted.includes(s));

  it('refuses a request without a key: 401 MISSING_API_KEY', async () => {
    expectError(await svc.call(route.method, url, { key: null }), 401, 'MISSING_API_KEY');
  });

  it('refuses a well-formed key that exists nowhere: 401 INVALID_TENANT_KEY', async () => {
    const unknown = `cdp_sk_${randomBytes(32).toString('base64url')}`;
    expectError(await svc.call(route.method, url, { key: unknown }), 401, 'INVALID_TENANT_KEY');
  });

  it.each(['not-a-key', 'cdp_sk_short', `cdp_xx_${randomBytes(32).toString('base64url')}`])(
    'refuses the malformed key %s: 401 INVALID_TENANT_KEY',
    async (bad) => {
      expectError(await svc.call(route.method, url, { key: bad }), 401, 'INVALID_TENANT_KEY');
    },
  );

  it('refuses a revoked key: 401 INVALID_TENANT_KEY', async () => {
    expectError(await svc.call(route.method, url, { key: revokedKey }), 401, 'INVALID_TENANT_KEY');
  });

  it.each(refused)(
    'refuses a key with only the %s scope: 403 INSUFFICIENT_SCOPE, naming the scopes that would do',
    async (scope) => {
      const res = await svc.call(route.method, url, { key: keys[scope] });
      expectError(res, 403, 'INSUFFICIENT_SCOPE');
      // Only scopes a key can have: the message must not name an internal requirement (`read`, `write`).
      expect(res.body.message).toBe(
        `this operation needs a key with the ${accepted.join(' or ')} scope; this key has: ${scope}`,
      );
    },
  );

  it.each(accepted)('lets a key with the %s scope through, with RateLimit headers', async (scope) => {
    const res = await svc.call(route.method, url, { key: keys[scope] });
    expectAuthorized(res);
    if (res.status >= 400) expectError(res, res.status, res.body?.error_code);
    // Batch-tier routes count events in their handler, so a request refused before it has none.
    if (route.rateTier === 'standard') {
      expect(Number(res.headers['ratelimit-limit'])).toBeGreaterThan(0);
      expect(Number(res.headers['ratelimit-remaining'])).toBeGreaterThanOrEqual(0);
      expect(Number(res.headers['ratelimit-reset'])).toBeGreaterThanOrEqual(0);
    }
  });
});

describe.each(titled(paramRoutes))('%s with another workspace’s id', (name, route) => {
  it('answers 404 NOT_FOUND, while the owning workspace finds it', async () => {
    const fixture = FIXTURES[name];
    if (!fixture) {
      expect.fail(
        `no cross-workspace fixture for "${name}": add one to test/route-matrix.fixtures.ts ` +
          '(the format is described at the top of that file)',
      );
    }
    const req = await fixture({ svc, other });
    expect(req.url, 'the fixture must return a URL of this very route').toMatch(patternOf(route.url));

    const foreign = await svc.call(route.method, req.url, { key: svc.ws.adminKey, body: req.body });
    expectError(foreign, 404, 'NOT_FOUND');

    const owner = await svc.call(route.method, req.url, { key: other.adminKey, body: req.body });
    if (req.ownerStatus !== undefined) expect(owner.status, owner.text).toBe(req.ownerStatus);
    else expect(owner.status, `the owner should find it: ${owner.text}`).not.toBe(404);
  });
});

describe.each(titled(operatorRoutes))('%s (operator token)', (_name, route) => {
  it.each([
    ['no Authorization header', {}],
    ['a wrong token', { authorization: `Bearer ${OPERATOR_TOKEN}x` }],
    ['the token in another scheme', { authorization: `Basic ${OPERATOR_TOKEN}` }],
    ['an admin API key instead', { 'x-api-key': svc.ws.adminKey }],
  ])('refuses %s: 401 INVALID_OPERATOR_TOKEN', async (_label, headers: Record<string, string>) => {
    const res = await svc.call(route.method, route.url, { key: null, headers });
    expectError(res, 401, 'INVALID_OPERATOR_TOKEN');
  });

  it('lets the operator token through', async () => {
    const res = await svc.call(route.method, route.url, {
      key: null,
      headers: { authorization: `Bearer ${OPERATOR_TOKEN}` },
    });
    expectAuthorized(res);
    expect(res.status).not.toBe(404);
  });

  it('does not exist (404 NOT_FOUND) when CDP_OPERATOR_TOKEN is unset', async () => {
    const app = await buildApp({ ...svc.rt.deps, config: { ...svc.config, operatorToken: null } });
    try {
      await app.ready();
      for (const authorization of [undefined, `Bearer ${OPERATOR_TOKEN}`, 'Bearer ']) {
        const res = await app.inject({
          method: route.method as 'POST',
          url: route.url,
          headers: authorization ? { authorization } : {},
        });
        expectError(
          { status: res.statusCode, headers: res.headers, body: res.json(), text: res.body },
          404,
          'NOT_FOUND',
        );
      }
    } finally {
      await app.close();
    }
  });
});

// The CLI's way into a service on the embedded database (test/data-dir-lock.test.ts has it with its
// lock); this service holds no data directory, so for every credential the route is not there.
describe.each(titled(localRoutes))('%s (local token)', (_name, route) => {
  it.each([
    ['no Authorization header', {}],
    ['the operator token', { authorization: `Bearer ${OPERATOR_TOKEN}` }],
    ['an admin API key', { 'x-api-key': svc.ws.adminKey }],
  ])('does not exist without a data-directory lock: 404 NOT_FOUND for %s', async (_label, headers) => {
    const res = await svc.call(route.method, route.url, { key: null, headers });
    expectError(res, 404, 'NOT_FOUND');
  });

  it('is left out of the API documentation', () => {
    expect(route.hidden).toBe(true);
  });
});

describe.each(titled(publicRoutes))('%s (public)', (_name, route) => {
  it('answers without a key', async () => {
    const res = await svc.call(route.method, placeholderUrl(route), { key: null });
    expectAuthorized(res);
    expect(res.status).toBeLessThan(500);
  });
});
