import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { retryAfterMs, send } from './send';

let server: http.Server;
let port: number;
beforeAll(async () => {
  // /hang never answers (a timeout), anything else answers 204.
  server = http.createServer((req, res) => {
    if (req.url !== '/hang') res.writeHead(204).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

const opts = (extra: Partial<Parameters<typeof send>[3]> = {}) => ({
  timeoutMs: 2_000,
  allowPrivate: true,
  signal: new AbortController().signal,
  ...extra,
});

describe('sending one attempt', () => {
  it('reports the status code and how long it took', async () => {
    const r = await send(`http://127.0.0.1:${port}/ok`, '{}', {}, opts());
    expect(r).toMatchObject({ statusCode: 204, error: null });
    expect(r.durationMs).toBeGreaterThanOrEqual(0);
  });

  it('gives up at the timeout and says so', async () => {
    const r = await send(`http://127.0.0.1:${port}/hang`, '{}', {}, opts({ timeoutMs: 200 }));
    expect(r).toMatchObject({ statusCode: null, error: 'timeout after 200 ms' });
    expect(r.durationMs).toBeLessThan(1_500);
  });

  it('refuses at connect time a name that resolves to loopback, unless private webhooks are allowed', async () => {
    const r = await send(`http://localhost:${port}/ok`, '{}', {}, opts({ allowPrivate: false }));
    expect(r.statusCode).toBeNull();
    expect(r.error).toMatch(/EBLOCKED|refused address/);
  });
});

describe('Retry-After', () => {
  it('reads seconds and HTTP dates, and ignores what it cannot read', () => {
    expect(retryAfterMs('120')).toBe(120_000);
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(retryAfterMs('Thu, 01 Jan 2026 00:00:30 GMT', now)).toBe(30_000);
    expect(retryAfterMs('soon')).toBeNull();
    expect(retryAfterMs(null)).toBeNull();
  });
});
