import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../../../test/expect-error';
import { startTestService, type TestService } from '../../../test/harness';

/**
 * The text rule for every body, query string and path parameter (text-rule.ts, json-body.ts): what
 * PostgreSQL cannot store is refused with a 400 naming where it is, the same on every route and on
 * both engines, never a 500 and never silently replaced by U+FFFD.
 */
let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc?.close());

const TEXT = 'must not contain NUL characters or unpaired surrogates';
const raw = (method: string, url: string, rawBody: string | Buffer, headers: Record<string, string> = {}) =>
  svc.call(method, url, { rawBody: rawBody as string, headers });
const pathsOf = (res: { body: { details?: Array<{ path: string }> } }) =>
  (res.body.details ?? []).map((d) => d.path);

describe('a JSON body with text PostgreSQL cannot store', () => {
  it.each([
    ['a lone surrogate in first_name', '{"identity":"s1@example.com","first_name":"\\udfff"}', '/first_name'],
    ['a lone surrogate in last_name', '{"identity":"s2@example.com","last_name":"a\\ud800"}', '/last_name'],
    ['a lone surrogate in identity', '{"identity":"s3\\udfff@example.com"}', '/identity'],
    [
      'a lone surrogate in an attribute value',
      '{"identity":"s4@example.com","attributes":{"a":["\\udc00"]}}',
      '/attributes/a/0',
    ],
    [
      'a lone surrogate in an attribute key',
      '{"identity":"s5@example.com","attributes":{"k\\udfff":1}}',
      '/attributes/k\uFFFD',
    ],
    [
      'a NUL in an attribute key',
      '{"identity":"s6@example.com","attributes":{"a\\u0000":1}}',
      '/attributes/a\\u0000',
    ],
  ])('POST /tenant/profiles refuses %s: 400 at %s', async (_what, body, path) => {
    const res = await raw('POST', '/tenant/profiles', body);
    expectError(res, 400, 'VALIDATION_ERROR');
    expect(res.body.details).toEqual([{ path, message: expect.stringContaining(TEXT) }]);
  });

  it.each([
    ['POST', '/tenant/apikeys', '{"name":"\\udfff","scopes":["viewer"]}', '/name'],
    ['POST', '/tenant/apikeys', '{"name":"a\\u0000b","scopes":["viewer"]}', '/name'],
    ['POST', '/tenant/products', '{"product_id":"p-\\ud800","name":"x"}', '/product_id'],
    ['POST', '/tenant/products', '{"product_id":"p1","name":"\\udfff"}', '/name'],
    ['POST', '/api/ingest', '{"event_type":"track","event_name":"x","identity":"\\udfff"}', '/identity'],
  ])('%s %s refuses it instead of storing U+FFFD: 400 at %s', async (method, url, body, path) => {
    const res = await raw(method, url, body);
    expectError(res, 400, 'VALIDATION_ERROR');
    expect(pathsOf(res)).toEqual([path]);
  });

  it('reports every problem of a batch at once, by item', async () => {
    const ev = (name: string) => `{"event_type":"track","event_name":"${name}","identity":"b@example.com"}`;
    const res = await raw('POST', '/tenant/ingest/batch', `[${ev('ok')},${ev('\\u0000')},${ev('\\udfff')}]`);
    expectError(res, 400, 'VALIDATION_ERROR');
    expect(pathsOf(res)).toEqual(['/1/event_name', '/2/event_name']);
  });

  it('accepts paired surrogates (emoji) and stores them unchanged', async () => {
    const res = await raw(
      'POST',
      '/tenant/products',
      '{"product_id":"emoji","name":"mug \\ud83d\\ude00 ☕"}',
    );
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.name).toBe('mug 😀 ☕');
  });
});

describe('a body that is not UTF-8 JSON as sent', () => {
  const event = '{"event_type":"track","event_name":"x","identity":"u@example.com"}';

  it('refuses invalid UTF-8 bytes with 400 INVALID_JSON naming the offset', async () => {
    const body = Buffer.concat([
      Buffer.from('{"name":"'),
      Buffer.from([0xff, 0xfe]),
      Buffer.from('","scopes":["viewer"]}'),
    ]);
    const res = await raw('POST', '/tenant/apikeys', body);
    expectError(res, 400, 'INVALID_JSON');
    expect(res.body.message).toMatch(/UTF-8.*offset 9/);
  });

  it('refuses an encoded surrogate (CESU-8 bytes ED A0 80)', async () => {
    const body = Buffer.concat([
      Buffer.from('{"product_id":"c","name":"'),
      Buffer.from([0xed, 0xa0, 0x80]),
      Buffer.from('"}'),
    ]);
    expectError(await raw('POST', '/tenant/products', body), 400, 'INVALID_JSON');
  });

  it.each(['iso-8859-1', 'utf-16', 'latin1'])('refuses charset=%s: 415', async (charset) => {
    const res = await raw('POST', '/api/ingest', event, {
      'content-type': `application/json; charset=${charset}`,
    });
    expectError(res, 415, 'UNSUPPORTED_MEDIA_TYPE');
  });

  it.each(['utf-8', 'UTF-8', 'utf8', '"utf-8"'])('accepts charset=%s', async (charset) => {
    const res = await raw('POST', '/api/ingest', event, {
      'content-type': `application/json; charset=${charset}`,
    });
    expect(res.status, res.text).toBe(202);
  });

  it.each([
    ['a gzip body', gzipSync(event), 'gzip'],
    ['a plain body labelled gzip', Buffer.from(event), 'gzip'],
    ['br', Buffer.from(event), 'br'],
    ['deflate', Buffer.from(event), 'deflate'],
  ])('refuses %s with Content-Encoding: 415, never parsed as if absent', async (_what, body, encoding) => {
    const res = await raw('POST', '/api/ingest', body, { 'content-encoding': encoding });
    expectError(res, 415, 'UNSUPPORTED_MEDIA_TYPE');
    expect(res.body.message).toContain('Content-Encoding');
  });

  it('accepts Content-Encoding: identity', async () => {
    const res = await raw('POST', '/api/ingest', event, { 'content-encoding': 'identity' });
    expect(res.status, res.text).toBe(202);
  });
});

describe('query strings and path parameters', () => {
  it.each([
    ['GET', '/tenant/profiles?email=%ED%A0%80'],
    ['GET', '/tenant/profiles?identity=%FF'],
    ['GET', '/tenant/orders?status=%E2%82'],
    ['GET', '/tenant/profiles?email=a%00b'],
    ['GET', '/tenant/products?category=%00'],
    ['GET', '/tenant/profiles?a%00=1'],
    ['POST', '/tenant/dead-letters/%00/retry'],
    ['DELETE', '/tenant/apikeys/key%00'],
    ['GET', '/tenant/profiles/a%00b'],
    ['GET', '/tenant/orders/%ED%A0%80'],
    ['GET', '/tenant/products/x%00'],
  ])('%s %s: 400, never a 500', async (method, url) => {
    const res = await svc.call(method, url);
    expectError(res, 400, 'VALIDATION_ERROR');
  });

  it('names the parameter', async () => {
    const q = await svc.call('GET', '/tenant/profiles?email=a%00b');
    expect(q.body.details).toEqual([{ path: '/email', message: TEXT }]);
    const p = await svc.call('DELETE', '/tenant/apikeys/key%00');
    expect(p.body.details).toEqual([{ path: '/key_id', message: TEXT }]);
  });

  it('still refuses an unauthenticated request with 401 first', async () => {
    expectError(await svc.call('GET', '/tenant/profiles?email=%00', { key: null }), 401, 'MISSING_API_KEY');
  });

  it('leaves well-formed percent-encoding alone', async () => {
    const res = await svc.call('GET', '/tenant/profiles?email=ad%C3%A9%40example.com');
    expect(res.status, res.text).toBe(200);
  });
});
