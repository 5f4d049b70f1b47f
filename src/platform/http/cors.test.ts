import { Type } from 'typebox';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { expectError } from '../../../test/expect-error';
import { type Reply, startTestService, type TestService } from '../../../test/harness';
import { waitUntil } from '../../../test/wait';
import { buildApp } from '../../app';
import {
  createOriginIndex,
  type OriginIndex,
  type OriginIndexOptions,
  type OriginSource,
  PREFLIGHT_MAX_AGE_SECONDS,
} from './cors';
import type { App } from './types';

/** CORS preflight on the ingest endpoints answers for allowed origins only. */
let svc: TestService;
let app: App;
let browserKey: string;

beforeAll(async () => {
  svc = await startTestService();
  browserKey = await svc.ws.key(['ingest'], ['shop.example.com', '*.example.org']);
  await svc.ws.key(['viewer'], ['intranet.example.net']);
  // Keys written beside the API reach the preflight index by their notification.
  const { origins } = svc.rt.deps;
  await until(() => origins.allows('shop.example.com') && origins.allows('intranet.example.net'));
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
    // The headers the preflight asked for, echoed (a client may send its own: cors.ts).
    expect(res.headers['access-control-allow-headers']).toBe('content-type,x-api-key');
    expect(res.headers['access-control-max-age']).toBe(String(PREFLIGHT_MAX_AGE_SECONDS));
    expect(res.headers.vary).toMatch(/Origin/);
  });

  it.each([
    ['asks for none', undefined],
    ['asks for something that is not a list of header names', 'content-type, x-a: b'],
  ])("allows the API's own headers when the preflight %s", async (_label, asked) => {
    const res = await send('OPTIONS', '/test/collect', {
      origin: 'https://shop.example.com',
      'access-control-request-method': 'POST',
      ...(asked === undefined ? {} : { 'access-control-request-headers': asked }),
    });
    expect(res.status).toBe(204);
    expect(res.headers['access-control-allow-headers']).toBe('Content-Type, X-API-Key');
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

describe('keys created and revoked through the API', () => {
  it('answer preflights from the moment the key is shown, and stop the moment it is revoked', async () => {
    const created = await svc.call('POST', '/tenant/apikeys', {
      body: { name: 'new site', scopes: ['ingest'], allowed_domains: ['*.new-site.example'] },
    });
    expect(created.status).toBe(200);
    expect((await preflight('https://www.new-site.example')).status).toBe(204);
    expect((await svc.call('DELETE', `/tenant/apikeys/${created.body.data.id}`)).status).toBe(200);
    expectError(await preflight('https://www.new-site.example'), 403, 'ORIGIN_NOT_ALLOWED');
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

/** A store of keys' patterns as the index sees it: writes notify like a COMMIT would. */
function fakeSource(initial: Record<string, readonly string[]> = {}) {
  const rows = new Map(Object.entries(initial));
  let onChange: (owner: string) => void = () => {};
  let onLost: () => void = () => {};
  let watching = true;
  let failNextLoad = false;
  let gate: Promise<void> | null = null;
  const calls = { loadAll: 0, load: 0 };
  const source: OriginSource = {
    async *loadAll() {
      calls.loadAll++;
      if (gate !== null) await gate;
      const all = [...rows].map(([owner, patterns]) => ({ owner, patterns }));
      for (let i = 0; i < all.length; i += 500) yield all.slice(i, i + 500);
    },
    async load(owners) {
      calls.load++;
      if (failNextLoad) {
        failNextLoad = false;
        throw new Error('connection reset');
      }
      return owners.filter((o) => rows.has(o)).map((owner) => ({ owner, patterns: rows.get(owner)! }));
    },
    async watch(change, lost) {
      onChange = change;
      onLost = lost;
      return async () => {};
    },
    get watching() {
      return watching;
    },
  };
  return {
    source,
    calls,
    /** A key written (patterns) or revoked (null), and its change notified. */
    write(owner: string, patterns: readonly string[] | null, notify = true) {
      if (patterns) rows.set(owner, patterns);
      else rows.delete(owner);
      if (notify) onChange(owner);
    },
    loseNotifications() {
      watching = false;
      onLost();
    },
    restoreNotifications() {
      watching = true;
    },
    failNextLoad() {
      failNextLoad = true;
    },
    /** Full loads wait until the returned function is called. */
    holdFullLoads(): () => void {
      let release = () => {};
      gate = new Promise<void>((r) => {
        release = () => {
          gate = null;
          r();
        };
      });
      return release;
    },
  };
}

async function until(check: () => boolean, ms = 5_000): Promise<void> {
  await waitUntil(check, { what: 'the index to catch up', timeoutMs: ms, intervalMs: 5 });
}

describe('the origin index (unit)', () => {
  const started: OriginIndex[] = [];
  const start = async (source: OriginSource, opts: OriginIndexOptions = {}) => {
    const index = createOriginIndex(source, opts);
    await index.start();
    started.push(index);
    return index;
  };
  afterEach(async () => {
    for (const index of started.splice(0)) await index.stop();
  });

  it('answers the origins of every key from memory, exact hosts and wildcards', async () => {
    const f = fakeSource({ k1: ['shop.example.com'], k2: ['*.example.org', 'Intranet.Example.net'] });
    const index = await start(f.source);
    expect(index.allows('shop.example.com')).toBe(true);
    expect(index.allows('a.b.example.org')).toBe(true);
    expect(index.allows('intranet.example.net')).toBe(true);
    expect(index.allows('example.org')).toBe(false);
    expect(index.allows('shop.example.com.evil.com')).toBe(false);
    expect(f.calls).toEqual({ loadAll: 1, load: 0 });
  });

  it('learns a key created or revoked on any process from its notification, reading only that key', async () => {
    const f = fakeSource({ k1: ['a.com'] });
    const index = await start(f.source);
    f.write('k2', ['b.com']);
    await until(() => index.allows('b.com'));
    f.write('k1', null);
    await until(() => !index.allows('a.com'));
    expect(f.calls).toEqual({ loadAll: 1, load: 2 });
  });

  it('resolves changed() once this process sees its own change', async () => {
    const f = fakeSource();
    const index = await start(f.source);
    f.write('k1', ['a.com'], false);
    await index.changed('k1');
    expect(index.allows('a.com')).toBe(true);
  });

  it('keeps a pattern two keys share until both are gone', async () => {
    const f = fakeSource({ k1: ['*.shared.com', 'one.com'], k2: ['*.shared.com'] });
    const index = await start(f.source);
    f.write('k1', null);
    await index.changed('k1');
    expect(index.allows('x.shared.com')).toBe(true);
    expect(index.allows('one.com')).toBe(false);
    f.write('k2', null);
    await index.changed('k2');
    expect(index.allows('x.shared.com')).toBe(false);
    expect(index.stats()).toMatchObject({ owners: 0, patterns: 0 });
  });

  it('reads many changes notified at once in a few statements', async () => {
    const f = fakeSource();
    const index = await start(f.source);
    for (let i = 0; i < 1000; i++) f.write(`k${i}`, [`s${i}.com`]);
    await index.changed('k999');
    expect(index.allows('s0.com') && index.allows('s999.com')).toBe(true);
    expect(f.calls.load).toBeLessThanOrEqual(3);
  });

  describe('on the clock (fake timers: ticks run as time is advanced)', () => {
    beforeEach(() => {
      vi.useFakeTimers();
    });
    afterEach(() => {
      vi.useRealTimers();
    });
    const advance = (ms: number) => vi.advanceTimersByTimeAsync(ms);

    it('after notifications were lost, loads everything again once they arrive, at most every retryMs', async () => {
      const f = fakeSource({ k1: ['a.com'] });
      const index = await start(f.source, { retryMs: 5_000, blindRefreshMs: 30_000 });
      f.loseNotifications();
      f.write('k2', ['b.com'], false);
      await advance(10_000);
      // Within blindRefreshMs, no load while changes still cannot arrive.
      expect(f.calls.loadAll).toBe(1);
      expect(index.stats().stale).toBe(true);
      f.restoreNotifications();
      await advance(1_000);
      expect(index.allows('b.com')).toBe(true);
      expect(f.calls.loadAll).toBe(2);
      expect(index.stats().stale).toBe(false);
      // Lost again at once: the next load waits for retryMs after the last one.
      f.loseNotifications();
      f.restoreNotifications();
      await advance(4_000);
      expect(f.calls.loadAll).toBe(2);
      await advance(1_000);
      expect(f.calls.loadAll).toBe(3);
    });

    it('while changes cannot arrive at all, loads everything every blindRefreshMs', async () => {
      const f = fakeSource({ k1: ['a.com'] });
      const index = await start(f.source, { blindRefreshMs: 30_000 });
      f.loseNotifications();
      f.write('k2', ['b.com'], false);
      await advance(29_000);
      expect(index.allows('b.com')).toBe(false);
      await advance(1_000);
      expect(index.allows('b.com')).toBe(true);
      f.write('k3', ['c.com'], false);
      await advance(30_000);
      expect(index.allows('c.com')).toBe(true);
      expect(f.calls.loadAll).toBe(3);
    });

    it('loads everything again every refreshMs, for a row edited by hand', async () => {
      const f = fakeSource({ k1: ['a.com'] });
      const index = await start(f.source, { refreshMs: 60_000 });
      f.write('k2', ['b.com'], false);
      await advance(59_000);
      expect(index.allows('b.com')).toBe(false);
      await advance(1_000);
      expect(index.allows('b.com')).toBe(true);
      expect(f.calls.loadAll).toBe(2);
    });

    it('asks for no second full load while one is still running', async () => {
      const f = fakeSource({ k1: ['a.com'] });
      const index = await start(f.source, { refreshMs: 60_000 });
      const release = f.holdFullLoads();
      await advance(300_000);
      expect(f.calls.loadAll).toBe(2);
      release();
      await advance(0);
      expect(index.stats().fullLoads).toBe(2);
    });

    it('recovers from a failed read of a change with a full load after retryMs', async () => {
      const f = fakeSource();
      const index = await start(f.source, { retryMs: 5_000 });
      f.failNextLoad();
      f.write('k1', ['a.com']);
      await advance(0);
      expect(index.stats().stale).toBe(true);
      expect(index.allows('a.com')).toBe(false);
      await advance(5_000);
      expect(index.allows('a.com')).toBe(true);
      expect(f.calls.loadAll).toBe(2);
    });
  });
});

describe('the cost of a foreign origin (issue 23, finding 3)', () => {
  /** 3000 keys × 100 domains, half exact hosts and half wildcards. */
  const manyKeys = () => {
    const keys: Record<string, string[]> = {};
    for (let k = 0; k < 3000; k++) {
      keys[`k${k}`] = Array.from({ length: 100 }, (_, d) =>
        d % 2 ? `*.k${k}-d${d}.example` : `k${k}-d${d}.shop.example`,
      );
    }
    return keys;
  };

  it('decides a foreign origin without looking at every pattern of every key', async () => {
    const index = createOriginIndex(fakeSource(manyKeys()).source);
    await index.start();
    try {
      expect(index.stats().patterns).toBe(300_000);
      expect(index.allows('a.k7-d3.example')).toBe(true);
      const host = 'www.evil.example.com';
      const before = index.stats().probes;
      expect(index.allows(host)).toBe(false);
      // One lookup of the host, one per suffix after a dot: its labels, whatever the number of keys.
      expect(index.stats().probes - before).toBe(host.split('.').length);
    } finally {
      await index.stop();
    }
  });

  it('never reloads every pattern because an origin did not match', async () => {
    let now = 0;
    const f = fakeSource({ k1: ['shop.example.com'] });
    const index = createOriginIndex(f.source, { now: () => now });
    await index.start();
    try {
      // Ten minutes of foreign origins, ten a second.
      for (let i = 0; i < 6000; i++) {
        now += 100;
        expect(index.allows(`x${i}.evil.com`)).toBe(false);
      }
      expect(f.calls).toEqual({ loadAll: 1, load: 0 });
    } finally {
      await index.stop();
    }
  });

  it('refuses a host longer than DNS allows without looking at it', async () => {
    const index = createOriginIndex(fakeSource({ k1: ['*.example.com'] }).source);
    await index.start();
    try {
      const before = index.stats().probes;
      expect(index.allows(`${'a.'.repeat(200)}example.com`)).toBe(false);
      expect(index.stats().probes).toBe(before);
    } finally {
      await index.stop();
    }
  });
});
