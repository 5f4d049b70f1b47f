import { Type } from 'typebox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../../../test/expect-error';
import { type Reply, startTestService, type TestService } from '../../../test/harness';
import { buildApp } from '../../app';
import { createOriginPolicy, PREFLIGHT_MAX_AGE_SECONDS } from './cors';
import type { App } from './types';

/** Contract §2: CORS preflight on the ingest endpoints answers for allowed origins only. */
let svc: TestService;
let app: App;
let browserKey: string;

beforeAll(async () => {
  svc = await startTestService();
  // Keys first: the preflight policy reads the domain list once and then caches it.
  browserKey = await svc.ws.key(['ingest'], ['shop.example.com', '*.example.org']);
  await svc.ws.key(['viewer'], ['intranet.example.net']);
  app = await buildApp(svc.rt.deps);
  // A browser-facing route that exists only in this test, so CORS is tested apart from ingestion.
  app.post(
    '/test/collect',
    {
      config: { auth: 'ingest', cors: true },
      schema: { body: Type.Object({ n: Type.Integer() }, { additionalProperties: false }) },
    },
    async () => ({ status: 'success' as const }),
  );
  app.post('/test/server-only', { config: { auth: 'ingest' } }, async () => ({ status: 'success' as const }));
  await app.ready();
});
afterAll(async () => {
  await app?.close();
  await svc?.close();
});

const send = async (
  method: 'OPTIONS' | 'POST',
  url: string,
  headers: Record<string, string>,
  payload?: unknown,
): Promise<Reply> => {
  const res = await app.inject({
    method,
    url,
    headers: payload === undefined ? headers : { 'content-type': 'application/json', ...headers },
    ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }),
  });
  let body: unknown = null;
  try {
    body = JSON.parse(res.body);
  } catch {}
  return { status: res.statusCode, headers: res.headers, body, text: res.body };
};

const preflight = (origin: string | null, url = '/test/collect') =>
  send('OPTIONS', url, {
    ...(origin === null ? {} : { origin }),
    'access-control-request-method': 'POST',
    'access-control-request-headers': 'content-type,x-api-key',
  });

describe('CORS preflight', () => {
  it.each([
    'https://shop.example.com',
    'http://shop.example.com:8080',
    'https://a.example.org',
    'https://deep.a.example.org:8443',
    'https://intranet.example.net',
  ])('answers 204 for %s, an origin some key allows, echoing it exactly', async (origin) => {
    const res = await preflight(origin);
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expect(res.headers['access-control-allow-origin']).toBe(origin);
    expect(res.headers['access-control-allow-methods']).toBe('POST');
    expect(res.headers['access-control-allow-headers']).toBe('Content-Type, X-API-Key');
    expect(res.headers['access-control-max-age']).toBe(String(PREFLIGHT_MAX_AGE_SECONDS));
    expect(res.headers.vary).toMatch(/Origin/);
  });

  it.each([
    ['another site', 'https://evil.com'],
    ['the bare domain of a wildcard', 'https://example.org'],
    ['a look-alike suffix', 'https://shop.example.com.evil.com'],
    ['a look-alike prefix', 'https://evilexample.org'],
    ['the null origin', 'null'],
    ['garbage', 'not a url'],
  ])('refuses %s with 403 ORIGIN_NOT_ALLOWED and no CORS grant', async (_label, origin) => {
    const res = await preflight(origin);
    expectError(res, 403, 'ORIGIN_NOT_ALLOWED');
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
    expect(res.headers.vary).toMatch(/Origin/);
  });

  it('refuses a preflight without an Origin', async () => {
    expectError(await preflight(null), 403, 'ORIGIN_NOT_ALLOWED');
  });

  it('exists only beside routes marked cors: true', async () => {
    const res = await preflight('https://shop.example.com', '/test/server-only');
    expectError(res, 405, 'METHOD_NOT_ALLOWED');
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('is added for every cors route of the real app, and kept out of the OpenAPI document', async () => {
    const corsRoutes = svc.app.routeList.filter((r) => r.cors && r.method === 'POST');
    for (const r of corsRoutes) {
      const twin = svc.app.routeList.find((p) => p.preflight && p.url === r.url);
      expect(twin, `preflight for ${r.url}`).toMatchObject({
        method: 'OPTIONS',
        auth: 'public',
        hidden: true,
      });
    }
    const doc = (await svc.call('GET', '/openapi.json', { key: null })).body;
    for (const path of Object.values(doc.paths) as Array<Record<string, unknown>>) {
      expect(path.options).toBeUndefined();
    }
  });
});

describe('the request after the preflight', () => {
  it('grants the allowed origin read access to the answer and its rate-limit headers', async () => {
    const res = await send(
      'POST',
      '/test/collect',
      { origin: 'https://shop.example.com', 'x-api-key': browserKey },
      { n: 1 },
    );
    expect(res.status).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBe('https://shop.example.com');
    expect(res.headers['access-control-expose-headers']).toMatch(/RateLimit-Remaining/);
    expect(res.headers.vary).toMatch(/Origin/);
  });

  it('keeps the grant on an error answer, so the page can read why', async () => {
    const res = await send(
      'POST',
      '/test/collect',
      { origin: 'https://a.example.org', 'x-api-key': browserKey },
      { n: 'x' },
    );
    expectError(res, 400, 'VALIDATION_ERROR');
    expect(res.headers['access-control-allow-origin']).toBe('https://a.example.org');
  });

  it('refuses the key from an origin its own list does not allow, even one another key allows', async () => {
    const res = await send(
      'POST',
      '/test/collect',
      { origin: 'https://intranet.example.net', 'x-api-key': browserKey },
      { n: 1 },
    );
    expectError(res, 403, 'ORIGIN_NOT_ALLOWED');
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
  });
});

describe('origin policy cache (unit)', () => {
  const fakeDb = (lists: string[][]) => {
    let calls = 0;
    const db = async () => {
      const list = lists[Math.min(calls, lists.length - 1)]!;
      calls++;
      return list;
    };
    return { db, calls: () => calls };
  };

  it('serves matches from memory and re-reads at most once per interval for misses', async () => {
    let now = 0;
    const f = fakeDb([['a.com'], ['a.com', 'b.com']]);
    const policy = createOriginPolicy(f.db, { hitTtlMs: 30_000, missRefreshMs: 1_000, now: () => now });
    expect(await policy.allows('a.com')).toBe(true);
    expect(await policy.allows('a.com')).toBe(true);
    expect(f.calls()).toBe(1);
    // A flood of unknown origins inside one interval costs no query.
    for (let i = 0; i < 50; i++) expect(await policy.allows(`x${i}.com`)).toBe(false);
    expect(f.calls()).toBe(1);
    // After the interval a miss re-reads, and a key created meanwhile (b.com) is found.
    now = 1_500;
    expect(await policy.allows('b.com')).toBe(true);
    expect(f.calls()).toBe(2);
  });

  it('drops patterns whose keys are gone once the cache ages out', async () => {
    let now = 0;
    const f = fakeDb([['gone.com'], []]);
    const policy = createOriginPolicy(f.db, { hitTtlMs: 30_000, now: () => now });
    expect(await policy.allows('gone.com')).toBe(true);
    now = 30_001;
    expect(await policy.allows('gone.com')).toBe(false);
  });

  it('reads once for many concurrent preflights', async () => {
    const f = fakeDb([['a.com']]);
    const policy = createOriginPolicy(f.db);
    const answers = await Promise.all(Array.from({ length: 20 }, () => policy.allows('a.com')));
    expect(answers.every(Boolean)).toBe(true);
    expect(f.calls()).toBe(1);
  });
});
