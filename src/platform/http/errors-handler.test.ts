import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../../../test/expect-error';
import { type Reply, startTestService, type TestService } from '../../../test/harness';
import { buildApp } from '../../app';
import { AppError } from '../errors';
import { isStorageUnavailable, toAppError, validationDetails } from './errors-handler';
import type { App } from './types';

/** docs/api.md "Envelope": every failure, the framework's own included, answers in the one envelope. */
let svc: TestService;
/** The real app plus routes that exist only in this test, to provoke internal failures. */
let app: App;

const SECRET_TEXT = 'SELECT password FROM secret_table WHERE id = 42 at /srv/app/src/secret.ts:12:7';

beforeAll(async () => {
  svc = await startTestService();
  app = await buildApp(svc.rt.deps);
  app.get('/test/throw', { config: { auth: 'public' } }, async () => {
    throw new Error(SECRET_TEXT);
  });
  app.get('/test/throw-string', { config: { auth: 'public' } }, async () => {
    throw 'key_0123 prf_0456';
  });
  app.get('/test/bad-sql', { config: { auth: 'public' } }, async () => {
    await svc.rt.deps.db.query('SELECT password FROM secret_table_xyz WHERE id = $1', [42]);
  });
  app.get('/test/storage-down', { config: { auth: 'public' } }, async () => {
    throw Object.assign(new Error('connection to 10.0.0.7:5432 failed'), { code: '08006' });
  });
  app.get('/test/app-error', { config: { auth: 'admin' } }, async () => {
    throw new AppError('CONFLICT', 'already there');
  });
  await app.ready();
});
afterAll(async () => {
  await app?.close();
  await svc?.close();
});

const inject = async (method: string, url: string, headers: Record<string, string> = {}): Promise<Reply> => {
  const res = await app.inject({ method: method as 'GET', url, headers });
  let body: unknown = null;
  try {
    body = JSON.parse(res.body);
  } catch {}
  return { status: res.statusCode, headers: res.headers, body, text: res.body };
};

describe('unknown routes and methods', () => {
  it('answers an unknown path with 404 NOT_FOUND, with or without a key', async () => {
    expectError(await svc.call('GET', '/no/such/path', { key: null }), 404, 'NOT_FOUND');
    expectError(await svc.call('GET', '/no/such/path?x=1'), 404, 'NOT_FOUND');
    expectError(await svc.call('POST', '/tenant', { body: {} }), 404, 'NOT_FOUND');
  });

  it('answers a known path with a method it does not serve with 405 and Allow', async () => {
    const res = await svc.call('PUT', '/tenant/apikeys', { body: {} });
    expectError(res, 405, 'METHOD_NOT_ALLOWED');
    expect(String(res.headers.allow).split(', ').sort()).toEqual(['GET', 'HEAD', 'POST']);

    const one = await svc.call('PATCH', '/tenant/apikeys/key_x', { key: null });
    expectError(one, 405, 'METHOD_NOT_ALLOWED');
    expect(one.headers.allow).toBe('DELETE');
  });

  it('caps how much of a long path it echoes', async () => {
    const res = await svc.call('GET', `/${'a'.repeat(5000)}`, { key: null });
    expectError(res, 404, 'NOT_FOUND');
    expect(res.body.message.length).toBeLessThan(300);
  });

  it('answers an undecodable path in the envelope too', async () => {
    expectError(await svc.call('GET', '/tenant/apikeys/%E0%A4%A', { key: null }), 400, 'VALIDATION_ERROR');
  });
});

describe('request bodies', () => {
  const post = (rawBody: string, headers: Record<string, string> = {}) =>
    svc.call('POST', '/tenant/apikeys', { rawBody, headers });

  it('refuses a body that is not JSON: 400 INVALID_JSON', async () => {
    for (const raw of ['{"name":', 'name=x', "{'name':'x'}", '{"a":1}}', '\u0000']) {
      expectError(await post(raw), 400, 'INVALID_JSON');
    }
  });

  it('refuses an empty body where one is expected: 400 INVALID_JSON', async () => {
    const res = await post('');
    expectError(res, 400, 'INVALID_JSON');
    expect(res.body.message).toMatch(/empty/);
  });

  it('accepts the JSON content type with no body on a route that takes none', async () => {
    const res = await svc.call('DELETE', '/tenant/apikeys/key_absent', {
      headers: { 'content-type': 'application/json' },
    });
    expectError(res, 404, 'NOT_FOUND');
  });

  it('refuses JSON that is valid but the wrong shape with VALIDATION_ERROR, not INVALID_JSON', async () => {
    for (const raw of ['null', '[]', '"x"', '1']) expectError(await post(raw), 400, 'VALIDATION_ERROR');
  });

  it.each([
    ['text/plain', 'hello'],
    ['application/x-www-form-urlencoded', 'name=x&scopes=admin'],
    ['multipart/form-data; boundary=x', '--x--'],
    ['application/xml', '<a/>'],
  ])('refuses a %s body: 415 UNSUPPORTED_MEDIA_TYPE', async (type, raw) => {
    expectError(await post(raw, { 'content-type': type }), 415, 'UNSUPPORTED_MEDIA_TYPE');
  });

  it('refuses a body without any content type: 415 UNSUPPORTED_MEDIA_TYPE', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/tenant/apikeys',
      headers: { 'x-api-key': svc.ws.adminKey },
      payload: Buffer.from('{"name":"x","scopes":["admin"]}'),
    });
    expectError(
      { status: res.statusCode, headers: res.headers, body: res.json(), text: res.body },
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    );
  });

  it('accepts application/json with a charset', async () => {
    const res = await post(JSON.stringify({ name: 'charset', scopes: ['viewer'] }), {
      'content-type': 'application/json; charset=utf-8',
    });
    expect(res.status).toBe(200);
  });

  it('refuses a body over the default 1 MiB limit: 413 PAYLOAD_TOO_LARGE', async () => {
    const big = JSON.stringify({ name: 'x'.repeat(1024 * 1024), scopes: ['admin'] });
    expectError(await post(big), 413, 'PAYLOAD_TOO_LARGE');
    const fits = JSON.stringify({ name: 'x'.repeat(1000 * 1000), scopes: ['admin'] });
    // Under the limit the body is read and validated (the name is too long for the schema).
    expectError(await post(fits), 400, 'VALIDATION_ERROR');
  });

  it.each([
    ['__proto__ at the top', '{"__proto__":{"admin":true},"name":"x","scopes":["admin"]}'],
    ['__proto__ nested', '{"name":"x","scopes":["admin"],"meta":{"a":[{"__proto__":{"x":1}}]}}'],
    [
      'constructor.prototype at the top',
      '{"constructor":{"prototype":{"x":1}},"name":"x","scopes":["admin"]}',
    ],
    [
      'constructor.prototype nested',
      '{"name":"x","scopes":["admin"],"a":{"b":{"constructor":{"prototype":{}}}}}',
    ],
  ])('refuses %s: 400 INVALID_JSON naming the forbidden key', async (_label, raw) => {
    const res = await post(raw);
    expectError(res, 400, 'INVALID_JSON');
    expect(res.body.message).toMatch(/forbidden key/);
    expect(({} as Record<string, unknown>).admin).toBeUndefined();
    expect(({} as Record<string, unknown>).x).toBeUndefined();
  });
});

describe('query strings', () => {
  it.each([
    ['limit=0', '/limit'],
    ['limit=501', '/limit'],
    ['limit=abc', '/limit'],
    ['limit=1.5', '/limit'],
    ['limit=', '/limit'],
    ['unknown=1', '/unknown'],
  ])('refuses ?%s: 400 VALIDATION_ERROR at %s', async (qs, path) => {
    const res = await svc.call('GET', `/tenant/apikeys?${qs}`);
    expectError(res, 400, 'VALIDATION_ERROR');
    expect(res.body.details.map((d: { path: string }) => d.path)).toContain(path);
  });

  it('accepts the limits at both ends of 1–500', async () => {
    expect((await svc.call('GET', '/tenant/apikeys?limit=1')).status).toBe(200);
    expect((await svc.call('GET', '/tenant/apikeys?limit=500')).status).toBe(200);
  });

  describe('cursors', () => {
    const firstCursor = async (): Promise<string> => {
      await svc.call('POST', '/tenant/apikeys', { body: { name: 'c1', scopes: ['viewer'] } });
      const res = await svc.call('GET', '/tenant/apikeys?limit=1');
      expect(res.body.pagination.has_more).toBe(true);
      return res.body.pagination.next_cursor;
    };

    it('accepts a cursor it issued', async () => {
      const cursor = await firstCursor();
      expect((await svc.call('GET', `/tenant/apikeys?limit=1&cursor=${cursor}`)).status).toBe(200);
    });

    it.each([
      ['a forged cursor', async () => 'A'.repeat(60)],
      [
        'a tampered cursor',
        async () => {
          const c = await firstCursor();
          const i = Math.floor(c.length / 2);
          return c.slice(0, i) + (c[i] === 'A' ? 'B' : 'A') + c.slice(i + 1);
        },
      ],
      [
        'a cursor of another collection',
        async () =>
          svc.rt.deps.cursors.encode({ collection: 'profiles', workspaceId: svc.ws.id, parent: null }, [1]),
      ],
      ['a cursor with characters outside base64url', async () => `${'A'.repeat(40)}%2B%2F`],
    ])('refuses %s: 400 INVALID_CURSOR', async (_label, make) => {
      const res = await svc.call('GET', `/tenant/apikeys?cursor=${await make()}`);
      expectError(res, 400, 'INVALID_CURSOR');
    });
  });
});

describe('internal failures', () => {
  const leaks = (res: Reply) => [
    res.text.includes('secret'),
    res.text.includes('SELECT'),
    res.text.includes('.ts'),
    res.text.includes('key_0123'),
    /\bat\s/.test(res.body.message),
    'stack' in res.body,
    'cause' in res.body,
  ];

  it.each(['/test/throw', '/test/throw-string', '/test/bad-sql'])(
    'answers %s with 500 INTERNAL_ERROR and nothing of the error itself',
    async (url) => {
      const res = await inject('GET', url);
      expectError(res, 500, 'INTERNAL_ERROR');
      expect(res.body.message).toBe('internal error');
      expect(leaks(res).some(Boolean), res.text).toBe(false);
    },
  );

  it('answers storage that cannot be reached with 503 UNAVAILABLE and Retry-After', async () => {
    const res = await inject('GET', '/test/storage-down');
    expectError(res, 503, 'UNAVAILABLE');
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    expect(res.text).not.toContain('10.0.0.7');
  });

  it('passes an AppError through with its own status and message, after auth', async () => {
    expectError(await inject('GET', '/test/app-error'), 401, 'MISSING_API_KEY');
    const res = await inject('GET', '/test/app-error', { 'x-api-key': svc.ws.adminKey });
    expectError(res, 409, 'CONFLICT');
    expect(res.body.message).toBe('already there');
  });
});

describe('error mapping (unit)', () => {
  it('maps framework errors by code, and unknown 4xx to a generic 400', () => {
    const fe = (code: string, statusCode: number) => Object.assign(new Error('x'), { code, statusCode });
    expect(toAppError(fe('FST_ERR_CTP_BODY_TOO_LARGE', 413)).code).toBe('PAYLOAD_TOO_LARGE');
    expect(toAppError(fe('FST_ERR_CTP_INVALID_MEDIA_TYPE', 415)).code).toBe('UNSUPPORTED_MEDIA_TYPE');
    expect(toAppError(fe('FST_ERR_BAD_URL', 400)).code).toBe('VALIDATION_ERROR');
    expect(toAppError(fe('SOMETHING_ELSE', 418)).code).toBe('VALIDATION_ERROR');
    expect(toAppError(fe('SOMETHING_ELSE', 503)).code).toBe('UNAVAILABLE');
    expect(toAppError(new TypeError('x')).code).toBe('INTERNAL_ERROR');
    expect(toAppError(undefined).code).toBe('INTERNAL_ERROR');
  });

  it('recognises storage outages, and only those', () => {
    const withCode = (code: string) => Object.assign(new Error('x'), { code });
    for (const c of ['08006', '08001', '57P01', '57P03', '53300', 'ECONNREFUSED'])
      expect(isStorageUnavailable(withCode(c)), c).toBe(true);
    expect(isStorageUnavailable(withCode('STORAGE_UNAVAILABLE'))).toBe(true);
    expect(isStorageUnavailable(new Error('PGlite is closed'))).toBe(true);
    expect(isStorageUnavailable(new Error('database is closed'))).toBe(true);
    expect(isStorageUnavailable(new Error('PGlite thread exited (code 1)'))).toBe(true);
    expect(isStorageUnavailable(new Error('Cannot use a pool after calling end on the pool'))).toBe(true);
    for (const c of ['42P01', '23505', '22P02']) expect(isStorageUnavailable(withCode(c)), c).toBe(false);
    expect(isStorageUnavailable(new Error('boom'))).toBe(false);
    expect(isStorageUnavailable(null)).toBe(false);
  });

  it('turns validation errors into JSON-pointer details naming the field', () => {
    expect(
      validationDetails([
        { instancePath: '', keyword: 'required', params: { missingProperty: 'a/b~c' } },
        { instancePath: '/3', keyword: 'additionalProperties', params: { additionalProperty: 'x' } },
        { instancePath: '/3', keyword: 'additionalProperties', params: { additionalProperty: 'x' } },
        { instancePath: '/s', keyword: 'enum', params: { allowedValues: ['a', 'b'] }, message: 'bad' },
        { instancePath: '', message: 'must be object' },
      ]),
    ).toEqual([
      { path: '/a~1b~0c', message: 'is required' },
      { path: '/3/x', message: 'is not a known field' },
      { path: '/s', message: 'must be one of: a, b' },
      { path: '/', message: 'must be object' },
    ]);
  });
});
