import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { retryAfterMs, send } from './send';

let server: http.Server;
let port: number;
/** TCP connections the receiver has accepted: a refused destination must not add to them. */
let connections = 0;
beforeAll(async () => {
  // /hang never answers (a timeout), anything else answers 204.
  server = http.createServer((req, res) => {
    if (req.url !== '/hang') res.writeHead(204).end();
  });
  server.on('connection', () => connections++);
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

describe('connections to a destination', () => {
  it('are kept alive and reused from one send to the next', async () => {
    await send(`http://127.0.0.1:${port}/ok`, '{}', {}, opts());
    const before = connections;
    for (let i = 0; i < 5; i++) {
      expect((await send(`http://127.0.0.1:${port}/ok`, '{}', {}, opts())).statusCode).toBe(204);
    }
    expect(connections).toBe(before);
  });

  it('replace a pooled connection the receiver dropped, and the attempt still goes through', async () => {
    // Answers the first request on each connection and drops the connection at the second, as a
    // receiver that closes idle connections does when a request crosses its close.
    const served = new WeakMap<object, number>();
    let opened = 0;
    const dropping = http.createServer((req, res) => {
      const n = (served.get(req.socket) ?? 0) + 1;
      served.set(req.socket, n);
      if (n > 1) req.socket.destroy();
      else req.resume().on('end', () => res.writeHead(204).end());
    });
    dropping.on('connection', () => opened++);
    await new Promise<void>((r) => dropping.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(dropping.address() as AddressInfo).port}/ok`;
    try {
      expect((await send(url, '{}', {}, opts())).statusCode).toBe(204);
      const again = await send(url, '{}', {}, opts());
      expect(again).toMatchObject({ statusCode: 204, error: null });
      expect(opened).toBe(2);
    } finally {
      dropping.closeAllConnections();
      await new Promise((r) => dropping.close(r));
    }
  });
});

describe('the address check at connect, without CDP_ALLOW_PRIVATE_WEBHOOKS', () => {
  // A subscription saved while private destinations were allowed keeps its URL after a restart
  // without the setting: the send itself must refuse it, whatever form its host takes.
  it.each([
    ['an IPv4 literal', (p: number) => `https://127.0.0.1:${p}/ok`, /127\.0\.0\.1/],
    ['an IPv6 literal', (p: number) => `https://[::ffff:127.0.0.1]:${p}/ok`, /127\.0\.0\.1 inside/],
    ['a name', (p: number) => `https://localhost:${p}/ok`, /127\.0\.0\.1|::1/],
  ])('refuses a loopback destination given as %s before connecting to it', async (_form, url, address) => {
    const before = connections;
    const r = await send(url(port), '{}', {}, opts({ allowPrivate: false }));
    expect(r).toMatchObject({ statusCode: null, refused: true });
    expect(r.error).toMatch(/^EBLOCKED: refused address .*loopback/);
    expect(r.error).toMatch(address);
    expect(r.error).toContain('CDP_ALLOW_PRIVATE_WEBHOOKS');
    expect(connections).toBe(before);
  });

  it('refuses an http:// destination before connecting, naming the setting', async () => {
    const before = connections;
    const r = await send(`http://127.0.0.1:${port}/ok`, '{}', {}, opts({ allowPrivate: false }));
    expect(r).toMatchObject({ statusCode: null, refused: true });
    expect(r.error).toMatch(/https:\/\//);
    expect(r.error).toContain('CDP_ALLOW_PRIVATE_WEBHOOKS');
    expect(connections).toBe(before);
  });

  it('refuses a scheme other than http and https even with the setting', async () => {
    const r = await send(`ftp://127.0.0.1:${port}/ok`, '{}', {}, opts());
    expect(r).toMatchObject({ statusCode: null, refused: true });
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
