import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { parseImportOptions, runImport, toIngestEvent } from './import.command';
import { createRetries } from './transfer';

/**
 * `cdp import` against a stand-in for POST /tenant/ingest/batch that answers as the service does:
 * it records each batch, and refuses the ones the test says to.
 */
const dir = mkdtempSync(join(tmpdir(), 'cdp-import-cmd-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let server: Server | null = null;
afterEach(async () => {
  await new Promise((resolve) => server?.close(resolve) ?? resolve(null));
  server = null;
});

type Answer = { status: number; body?: object; headers?: Record<string, string> } | null;

/** Each batch is given to `answer` (null: 202, stored); answers what was stored. */
async function stub(answer: (batch: Array<Record<string, unknown>>, n: number) => Answer) {
  const stored: Array<Record<string, unknown>> = [];
  const sizes: number[] = [];
  let n = 0;
  server = createServer((req, res) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => {
      text += d;
    });
    req.on('end', () => {
      const batch = JSON.parse(text) as Array<Record<string, unknown>>;
      sizes.push(Buffer.byteLength(text));
      const a = answer(batch, n++);
      if (a === null) {
        stored.push(...batch);
        res.writeHead(202, { 'content-type': 'application/json' }).end('{"status":"enqueued"}');
      } else
        res
          .writeHead(a.status, { 'content-type': 'application/json', ...a.headers })
          .end(JSON.stringify(a.body ?? {}));
    });
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server!.address() as AddressInfo).port}`, stored, sizes };
}

async function run(url: string, lines: string[]) {
  const file = join(dir, `f${Math.random()}.ndjson`);
  writeFileSync(file, `${lines.join('\n')}\n`);
  let out = '';
  const code = await runImport(
    parseImportOptions([file], { url, key: 'cdp_sk_test' }, {}),
    { stdout: { write: (s: string) => (out += s) }, stderr: { write: () => true } },
    () => createRetries(4, 1, 5),
  );
  return { code, summary: JSON.parse(out) };
}

const ev = (i: number, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ identity: `u${i}@example.com`, event_type: 'track', event_name: 'e', ...extra });

describe('an exported event, imported', () => {
  it('leaves out the service’s own fields and nulls, and keeps its id as the message id', () => {
    expect(
      toIngestEvent({
        id: 'evt_1',
        message_id: null,
        event_type: 'track',
        event_name: 'e',
        anonymous_id: null,
        identity: 'a@b.c',
        payload: { x: 1 },
        timestamp: '2025-01-01T00:00:00.000Z',
        received_at: '2025-01-02T00:00:00.000Z',
        profile_id: 'p',
        writeKey: 'cdp_pk_someone_else',
      }),
    ).toEqual({
      event: {
        message_id: 'evt_1',
        event_type: 'track',
        event_name: 'e',
        identity: 'a@b.c',
        payload: { x: 1 },
        timestamp: '2025-01-01T00:00:00.000Z',
      },
    });
    expect(toIngestEvent({ id: 'evt_1', message_id: 'm1', event_type: 'x' })).toEqual({
      event: { message_id: 'm1', event_type: 'x' },
    });
    expect(toIngestEvent('text')).toEqual({ reason: 'not a JSON object (string)' });
  });
});

describe('cdp import, batching', () => {
  it('sends at most 1000 events a batch, and at most 4 MiB', async () => {
    const small = await stub(() => null);
    const res = await run(
      small.url,
      Array.from({ length: 2500 }, (_, i) => ev(i)),
    );
    expect(res).toMatchObject({
      code: 0,
      summary: { lines: 2500, events_accepted: 2500, lines_rejected: 0 },
    });
    expect(small.sizes).toHaveLength(3);
    await new Promise((resolve) => server!.close(resolve));

    const big = await stub(() => null);
    const blob = 'x'.repeat(30_000);
    await run(
      big.url,
      Array.from({ length: 300 }, (_, i) => ev(i, { payload: { blob } })),
    );
    expect(big.stored).toHaveLength(300);
    for (const size of big.sizes) expect(size).toBeLessThanOrEqual(4 * 1024 * 1024);
    expect(big.sizes.length).toBeGreaterThan(2);
  });

  it('sets aside the items a refused batch names, sends the rest again, and waits out 429 and 503', async () => {
    const stub1 = await stub((batch, n) => {
      if (n === 0)
        return {
          status: 429,
          body: { error_code: 'RATE_LIMITED', message: 'slow' },
          headers: { 'retry-after': '0' },
        };
      if (n === 1)
        return {
          status: 503,
          body: { error_code: 'UNAVAILABLE', message: 'busy' },
          headers: { 'retry-after': '0' },
        };
      const bad = batch.flatMap((e, i) => (e.event_name === 'bad' ? [i] : []));
      if (bad.length === 0) return null;
      return {
        status: 400,
        body: {
          error_code: 'VALIDATION_ERROR',
          message: 'request validation failed',
          details: bad.flatMap((i) => [
            { path: `/${i}/event_name`, message: 'is not allowed here' },
            { path: `/${i}`, message: 'is odd' },
          ]),
        },
      };
    });
    const lines = [ev(1), ev(2, { event_name: 'bad' }), ev(3), ev(4, { event_name: 'bad' }), ev(5)];
    const res = await run(stub1.url, lines);
    expect(res.code).toBe(1);
    expect(res.summary).toMatchObject({ lines: 5, events_accepted: 3, lines_rejected: 2 });
    expect(res.summary.rejected).toEqual([
      { line: 2, reason: '/event_name: is not allowed here; is odd' },
      { line: 4, reason: '/event_name: is not allowed here; is odd' },
    ]);
    expect(stub1.stored.map((e) => e.identity)).toEqual([
      'u1@example.com',
      'u3@example.com',
      'u5@example.com',
    ]);
  });

  it('splits a batch the service finds too large, and stops with exit 1 on a refusal retrying cannot change', async () => {
    const split = await stub((batch) =>
      batch.length > 2 ? { status: 413, body: { error_code: 'PAYLOAD_TOO_LARGE', message: 'big' } } : null,
    );
    const res = await run(split.url, [ev(1), ev(2), ev(3), ev(4), ev(5)]);
    expect(res).toMatchObject({ code: 0, summary: { events_accepted: 5 } });
    await new Promise((resolve) => server!.close(resolve));

    const refused = await stub(() => ({
      status: 401,
      body: { error_code: 'INVALID_TENANT_KEY', message: 'unknown key' },
    }));
    const r = await run(refused.url, [ev(1)]);
    expect(r.code).toBe(1);
    expect(r.summary.events_accepted).toBe(0);
  });
});
