import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { expectError } from '../../../test/expect-error';
import { startTestService, type TestService } from '../../../test/harness';
import { batchRefusedAtItsLastItem } from '../../../test/stall-workload';
import type { AppError } from '../errors';
import { findArrayItems, parseArrayInSlices, parseJsonBody, SLICED_BODY_BYTES } from './json-body';

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

describe('a big JSON array, parsed in slices', () => {
  /** The value, or the refusal as the client would see it. */
  const outcome = async (parse: () => unknown) => {
    try {
      return { value: await parse() };
    } catch (err) {
      const e = err as AppError;
      return { code: e.code, message: e.message, details: e.details };
    }
  };
  const noWait = async () => {};
  /** What json-body.ts does with a body over SLICED_BODY_BYTES. */
  const inSlices = (text: string) =>
    /^[ \t\n\r]*\[/.test(text) ? parseArrayInSlices(text, noWait) : parseJsonBody(text);
  const expectSameAnswer = async (text: string) =>
    expect(await outcome(() => inSlices(text)), JSON.stringify(text).slice(0, 300)).toEqual(
      await outcome(() => parseJsonBody(text)),
    );

  it.each([
    ['[]'],
    [' \r\n\t[ ]\n'],
    ['[1]'],
    ['[1,]'],
    ['[,1]'],
    ['[1,,2]'],
    ['[1 2]'],
    ['[1]x'],
    ['[1]]'],
    ['[1}'],
    ['[{]}'],
    ['[{"a":"],}["}]'],
    ['["\\"]", "\\\\", "\\\\\\"]"]'],
    ['["abc'],
    ['["abc\\"]'],
    ['[1,2'],
    ['[\uFEFF1]'],
    ['[ \uFEFF1]'],
    ['\uFEFF[1]'],
    ['[1e999, {"a": [-1e999]}]'],
    ['[{"__proto__":{"x":1}}]'],
    ['[1, {"constructor":{"prototype":{}}}]'],
    ['[{"constructor":{"name":"ok"}}]'],
    ['[{"__proto__":{}}, 1x]'],
    ['["\\u0000", {"__proto__":{}}]'],
    ['["\\u0000", {"k\\udfff": ["\\ud800"]}]'],
    [`[1, ${'['.repeat(70)}${']'.repeat(70)}]`],
    [`[${Array(150).fill('"\\u0000"').join(',')}]`],
    [`[${Array(60).fill('{"a\\u0000":1,"b\\u0000":2,"c\\u0000":3}').join(',')}]`],
  ])('answers %j exactly as parsing it in one go does', async (text) => {
    await expectSameAnswer(text);
  });

  it('answers any array, valid or broken, exactly as parsing it in one go does (property)', async () => {
    const item = fc.oneof(
      fc.jsonValue({ maxDepth: 4, stringUnit: 'binary' }).map((v) => JSON.stringify(v)),
      fc.constantFrom(
        '{"__proto__":{"x":1}}',
        '{"\\u005f_proto__":1}',
        '{"constructor":{"prototype":{}}}',
        '1e999',
        '"\\ud800"',
        '"a\\\\"',
        '"]}\\",["',
        `${'['.repeat(66)}${']'.repeat(66)}`,
      ),
    );
    const space = fc.constantFrom('', ' ', '\n', '\t\r\n ');
    const mutation = fc.option(
      fc.record({
        kind: fc.constantFrom('delete', 'insert', 'truncate'),
        at: fc.nat(),
        ch: fc.constantFrom('[', ']', '{', '}', ',', '"', '\\', ':', ' ', '1', '\uFEFF', 'x'),
      }),
      { freq: 3 },
    );
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(item, space), { maxLength: 8 }),
        space,
        mutation,
        async (items, pad, m) => {
          let text = `${pad}[${items.map(([t, sp]) => `${sp}${t}${sp}`).join(',')}]${pad}`;
          if (m) {
            const at = m.at % (text.length + 1);
            text =
              m.kind === 'delete'
                ? text.slice(0, at) + text.slice(at + 1)
                : m.kind === 'insert'
                  ? text.slice(0, at) + m.ch + text.slice(at)
                  : text.slice(0, at);
          }
          await expectSameAnswer(text);
        },
      ),
      { seed: 11, numRuns: 1500 },
    );
  });

  it('gives the clock a look every 64 Ki characters scanned and every ≈ 32 Ki parsed', async () => {
    let looks = 0;
    const count = async () => {
      looks++;
    };
    const items = Array.from({ length: 40 }, (_, i) => ({ i, pad: 'x'.repeat(10_000) }));
    const text = JSON.stringify(items);
    expect(await findArrayItems(text, count)).toHaveLength(80);
    // Strings are skipped whole, so a look can come up to one string later than 64 Ki characters.
    const scanLooks = looks;
    expect(scanLooks).toBeGreaterThanOrEqual(Math.floor(text.length / (64 * 1024 + 10_000)));
    looks = 0;
    expect(await parseArrayInSlices(text, count)).toEqual(items);
    expect(looks - scanLooks).toBeGreaterThanOrEqual(Math.floor(text.length / (32 * 1024 + 10_000)));
  });

  it('gives the event loop back while it parses and validates a 4 MiB batch', async () => {
    // Identify events of 1,000 traits up to the 4 MiB limit; the last one is invalid, so the answer
    // (a 400 naming it, nothing stored) comes only after every item was parsed and validated.
    const events = batchRefusedAtItsLastItem();
    const body = JSON.stringify(events);
    expect(body.length).toBeGreaterThan(SLICED_BODY_BYTES * 10);
    const itemChars = Math.max(...events.map((e) => JSON.stringify(e).length));

    // Time, for the yielders, is work: every look at the clock finds the slice over, so wherever the
    // request looks, it must give the loop back. Counted, not timed: the looks of each stage (named
    // by the function on the stack that looks), and the most looks between two turns of the loop
    // (a chain of setImmediate callbacks).
    const stages = ['findArrayItems', 'parseArrayInSlices', 'checkBatchItems'] as const;
    const looks = Object.fromEntries(stages.map((s) => [s, 0])) as Record<(typeof stages)[number], number>;
    let clock = 0;
    let looksThisTurn = 0;
    let mostLooksInATurn = 0;
    const now = vi.spyOn(performance, 'now').mockImplementation(() => {
      const stack = new Error().stack ?? '';
      const stage = stages.find((s) => stack.includes(`at ${s} `) || stack.includes(`at async ${s} `));
      if (stage) {
        looks[stage]++;
        looksThisTurn++;
      }
      clock += 1_000;
      return clock;
    });
    let running = true;
    const tick = () => {
      mostLooksInATurn = Math.max(mostLooksInATurn, looksThisTurn);
      looksThisTurn = 0;
      if (running) setImmediate(tick);
    };
    setImmediate(tick);
    const res = await raw('POST', '/tenant/ingest/batch', body).finally(() => {
      running = false;
      now.mockRestore();
      tick();
    });

    expectError(res, 400, 'VALIDATION_ERROR');
    expect(pathsOf(res)).toEqual([`/${events.length - 1}/event_type`]);
    const seen = `looks ${JSON.stringify(looks)} for ${events.length} items, at most ${mostLooksInATurn} a turn`;
    // Every 64 Ki characters scanned, every group of ≈ 32 Ki parsed, every item validated: a stage
    // done in one go would not look at all.
    expect(looks.findArrayItems, seen).toBeGreaterThanOrEqual(
      Math.floor(body.length / (64 * 1024 + itemChars)),
    );
    expect(looks.parseArrayInSlices, seen).toBeGreaterThanOrEqual(
      Math.floor(body.length / (32 * 1024 + itemChars)),
    );
    expect(looks.checkBatchItems, seen).toBeGreaterThanOrEqual(events.length);
    // And a look that finds the slice over gives the loop back: a few looks a turn (a yield makes up
    // to three: is it due, is it still, when did the new slice start), never a stage's worth.
    expect(mostLooksInATurn, seen).toBeLessThanOrEqual(4);
  });
});
