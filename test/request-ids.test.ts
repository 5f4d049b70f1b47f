import { execFileSync } from 'node:child_process';
import net, { type AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app';
import { openFrontDoor } from '../src/platform/http/front-door';
import { createRequestIdGenerator, REQUEST_ID_SHAPE } from '../src/platform/http/request-id';
import type { App } from '../src/platform/http/types';
import { createLogger } from '../src/platform/logger';
import { ROOT } from './child';
import { expectError } from './expect-error';
import { ENGINE, type Reply, startTestService, type TestService } from './harness';
import { waitUntil } from './wait';

/** docs/api.md, "Request ids": every answer names its request, and only a trusted proxy may choose the name. */
const FRESH = /^req_[0-9a-z]{26}$/;

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc?.close());

describe(`every answer carries X-Request-Id (${ENGINE})`, () => {
  const cases: Array<[string, string, string, string | null]> = [
    ['a health probe', 'GET', '/health', null],
    ['a success', 'GET', '/tenant/apikeys', 'admin'],
    ['an error (no key)', 'GET', '/tenant/apikeys', null],
    ['an unknown API path (404)', 'GET', '/tenant/nothing-here', 'admin'],
    ['a method the path does not serve (405)', 'PUT', '/tenant/apikeys', 'admin'],
    ['the console’s page', 'GET', '/', null],
    ['a static file of the console', 'GET', '/favicon.svg', null],
    ['a console deep link', 'GET', '/profiles', null],
  ];

  it.each(cases)('%s', async (_what, method, url, key) => {
    const res = await svc.call(method, url, {
      key: key === null ? null : svc.ws.adminKey,
      headers: { accept: 'text/html' },
    });
    expect(String(res.headers['x-request-id'])).toMatch(FRESH);
    if (res.status >= 400) expect(res.body.request_id).toBe(res.headers['x-request-id']);
  });

  it('gives every request an id of its own', async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 50; i++)
      ids.add(String((await svc.call('GET', '/health', { key: null })).headers['x-request-id']));
    expect(ids.size).toBe(50);
  });

  it('gives requests of two processes different ids, each process’s in order', () => {
    const idsOf = () =>
      execFileSync(
        process.execPath,
        [
          '--import',
          'tsx',
          '-e',
          "import('./src/platform/http/request-id.ts').then((m) => { for (let i = 0; i < 2000; i++) console.log(m.newRequestId()); })",
        ],
        { cwd: ROOT, encoding: 'utf8' },
      )
        .trim()
        .split('\n');
    const [a, b] = [idsOf(), idsOf()];
    expect(new Set([...a, ...b]).size).toBe(4000);
    for (const ids of [a, b]) {
      expect(ids.every((id) => FRESH.test(id))).toBe(true);
      expect([...ids].sort()).toEqual(ids);
    }
  });

  it('names the error envelope’s request as the header does', async () => {
    const res = await svc.call('GET', '/tenant/apikeys', { key: null });
    expectError(res, 401, 'MISSING_API_KEY');
    expect(res.body.request_id).toMatch(FRESH);
  });
});

describe('a caller’s X-Request-Id', () => {
  it('is ignored when the service trusts no proxy', async () => {
    const res = await svc.call('GET', '/tenant/nope', { headers: { 'x-request-id': 'chosen-by-client-1' } });
    expect(res.headers['x-request-id']).not.toBe('chosen-by-client-1');
    expect(res.body.request_id).toMatch(FRESH);
  });

  describe('behind a trusted proxy (TRUST_PROXY=loopback)', () => {
    let proxied: TestService;
    beforeAll(async () => {
      proxied = await startTestService({ TRUST_PROXY: 'loopback' });
    });
    afterAll(async () => proxied?.close());

    const viaProxy = (id: string, remoteAddress = '127.0.0.1'): Promise<Reply> =>
      proxied.app
        .inject({
          method: 'GET',
          url: '/tenant/nope',
          remoteAddress,
          headers: { 'x-request-id': id, 'x-forwarded-proto': 'https', 'x-api-key': proxied.ws.adminKey },
        })
        .then((r) => ({ status: r.statusCode, headers: r.headers, body: r.json(), text: r.body }));

    it.each([
      ['a UUID', '0b6f6e7c-5a43-4d1e-9f39-2f4c7d1f9a10'],
      ['one character', 'x'],
      ['128 characters of every allowed kind', `${'aZ09._:-'.repeat(16)}`],
    ])('keeps %s from the proxy, in the header and the envelope', async (_what, id) => {
      const res = await viaProxy(id);
      expectError(res, 404, 'NOT_FOUND');
      expect(res.headers['x-request-id']).toBe(id);
      expect(res.body.request_id).toBe(id);
    });

    it.each([
      ['129 characters', 'a'.repeat(129)],
      ['a space', 'a b'],
      ['a quote', 'a"b'],
      ['a slash', 'a/b'],
      ['non-ASCII', 'récit'],
    ])('replaces one with %s by a fresh id', async (_what, id) => {
      const res = await viaProxy(id);
      expect(res.headers['x-request-id']).toMatch(FRESH);
    });

    it('records the proxy’s id and the client behind it in an audit entry', async () => {
      const res = await proxied.app.inject({
        method: 'POST',
        url: '/tenant/apikeys',
        headers: {
          'x-request-id': 'edge-7f3a9c',
          'x-forwarded-proto': 'https',
          'x-forwarded-for': '198.51.100.23',
          'x-api-key': proxied.ws.adminKey,
          'content-type': 'application/json',
        },
        payload: JSON.stringify({ name: 'behind the proxy', scopes: ['viewer'] }),
      });
      expect(res.statusCode, res.body).toBe(200);
      const { rows } = await proxied.rt.deps.db.query(
        'SELECT request_id, client_ip FROM audit_log WHERE action = $1',
        ['apikey.create'],
      );
      expect(rows).toEqual([{ request_id: 'edge-7f3a9c', client_ip: '198.51.100.23' }]);
    });

    it('replaces the id sent by a client the proxy list does not name', async () => {
      const res = await viaProxy('from-the-internet', '203.0.113.9');
      expect(res.headers['x-request-id']).toMatch(FRESH);
    });
  });

  it('is matched against the proxy list as Fastify matches it (addresses, prefixes, names)', () => {
    const raw = (remoteAddress: string, id: unknown) =>
      ({ headers: { 'x-request-id': id }, socket: { remoteAddress } }) as never;
    const gen = createRequestIdGenerator('10.0.0.0/8, 192.168.1.7');
    expect(gen(raw('10.1.2.3', 'abc'))).toBe('abc');
    expect(gen(raw('192.168.1.7', 'abc'))).toBe('abc');
    expect(gen(raw('::ffff:10.1.2.3', 'abc'))).toBe('abc');
    expect(gen(raw('192.168.1.8', 'abc'))).toMatch(FRESH);
    // Two headers are one refusal, not a choice.
    expect(gen(raw('10.1.2.3', ['a', 'b']))).toMatch(FRESH);
    expect(createRequestIdGenerator(null)(raw('10.1.2.3', 'abc'))).toMatch(FRESH);
    expect(REQUEST_ID_SHAPE.test('req_01hx')).toBe(true);
  });
});

describe('log lines of a request', () => {
  let app: App;
  let port: number;
  const lines: Array<Record<string, unknown>> = [];
  beforeAll(async () => {
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const l of chunk.toString().split('\n')) if (l.trim()) lines.push(JSON.parse(l));
        done();
      },
    });
    app = await buildApp({ ...svc.rt.deps, log: createLogger('debug', sink) });
    app.get('/test/fails', { config: { auth: 'public' } }, async (req) => {
      req.log.info('working on it');
      throw new Error('boom');
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    port = (app.server.address() as AddressInfo).port;
  });
  afterAll(async () => app?.close());

  it('carry the id the answer names, the error handler’s lines included', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/test/fails`);
    expect(res.status).toBe(500);
    const id = res.headers.get('x-request-id')!;
    expect(((await res.json()) as { request_id: string }).request_id).toBe(id);
    await waitUntil(() => lines.some((l) => l.msg === 'request failed'), { what: 'the error line' });
    const mine = lines.filter((l) => l.msg === 'working on it' || l.msg === 'request failed');
    expect(mine.map((l) => l.reqId)).toEqual([id, id]);
  });

  it('answer a request Node could not parse with an id of its own', async () => {
    const text = await new Promise<string>((resolve, reject) => {
      const s = net.connect(port, '127.0.0.1', () => s.write('NOT-HTTP\r\n\r\n'));
      let got = '';
      s.on('data', (d) => {
        got += d.toString();
      });
      s.on('close', () => resolve(got));
      s.on('error', reject);
    });
    const id = /x-request-id: (\S+)/i.exec(text)?.[1];
    expect(id).toMatch(FRESH);
    expect(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)).request_id).toBe(id);
  });
});

describe('while the service starts (the front door)', () => {
  it('names its answers too', async () => {
    const door = await openFrontDoor({ host: '127.0.0.1', port: 0, https: null, bodyTimeoutMs: 5000 });
    try {
      const health = await fetch(`${door.url}/health`);
      expect(health.headers.get('x-request-id')).toMatch(FRESH);
      const other = await fetch(`${door.url}/tenant/apikeys`);
      expect(other.status).toBe(503);
      expect(((await other.json()) as { request_id: string }).request_id).toBe(
        other.headers.get('x-request-id'),
      );
    } finally {
      await door.close();
    }
  });
});
