import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app';
import type { App } from '../src/platform/http/types';
import { serviceEnv, startService } from './child';
import { expectError } from './expect-error';
import { dropSchema, type Reply, startTestService, type TestService } from './harness';
import { needs } from './skips';
import { waitUntil } from './wait';

/** docs/operations.md "TLS and proxies" and "Health and readiness": TLS, plain HTTP only where safe, health and readiness. */
const hasOpenssl = (() => {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

const toReply = (res: { statusCode: number; headers: Reply['headers']; body: string }): Reply => {
  let body: unknown = null;
  try {
    body = JSON.parse(res.body);
  } catch {}
  return { status: res.statusCode, headers: res.headers, body, text: res.body };
};

/** One GET over a real socket; resolves with the answer or rejects with the transport error. */
function get(
  lib: typeof http | typeof https,
  port: number,
  path: string,
  headers: Record<string, string> = {},
): Promise<Reply & { peerCN: string | null }> {
  return new Promise((resolve, reject) => {
    const req = lib.request(
      { host: '127.0.0.1', port, path, headers, rejectUnauthorized: false, agent: false, timeout: 5000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const socket = res.socket as import('node:tls').TLSSocket;
          const tls = typeof socket.getPeerCertificate === 'function';
          resolve({
            ...toReply({
              statusCode: res.statusCode ?? 0,
              headers: res.headers,
              body: Buffer.concat(chunks).toString(),
            }),
            peerCN: tls ? [socket.getPeerCertificate().subject?.CN ?? null].flat().join(',') : null,
          });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

/** Writes raw bytes to the server and returns everything it answers before closing. */
function raw(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let out = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(out);
    }, 5000);
    socket.on('data', (d) => {
      out += d.toString();
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(out);
    });
    socket.on('error', (err) => {
      clearTimeout(timer);
      if (out) resolve(out);
      else reject(err);
    });
    socket.write(bytes);
  });
}

/** The JSON body of a raw HTTP answer. */
const rawBody = (answer: string) => JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));

needs('openssl', hasOpenssl).describe('TLS (certificate made with the openssl CLI)', () => {
  let dir: string;
  let svc: TestService;
  let port: number;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'cdp-tls-'));
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '1',
      ].concat(['-subj', '/CN=cdp-test', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')]),
      { stdio: 'ignore' },
    );
    // A non-loopback HOST is allowed with TLS; the server still binds 127.0.0.1 below.
    svc = await startTestService({
      HOST: '0.0.0.0',
      TLS_CERT_FILE: join(dir, 'cert.pem'),
      TLS_KEY_FILE: join(dir, 'key.pem'),
    });
    await svc.app.listen({ port: 0, host: '127.0.0.1' });
    port = (svc.app.server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await svc?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('serves HTTPS with the configured certificate', async () => {
    const res = await get(https, port, '/health');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok' });
    expect(res.peerCN).toBe('cdp-test');
  });

  it('serves the API itself over HTTPS', async () => {
    const res = await get(https, port, '/tenant/apikeys?limit=1', { 'x-api-key': svc.ws.adminKey });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('success');
  });

  it('cdp start speaks HTTPS from its first answer, while it starts and once it serves', async () => {
    const env = serviceEnv({ TLS_CERT_FILE: join(dir, 'cert.pem'), TLS_KEY_FILE: join(dir, 'key.pem') });
    const child = await startService(env, { until: 'port' });
    try {
      expect(child.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
      const childPort = Number(new URL(child.url!).port);
      const health = await get(https, childPort, '/health');
      expect(health.status).toBe(200);
      expect(health.peerCN).toBe('cdp-test');
      await waitUntil(async () => (await get(https, childPort, '/ready')).status === 200, {
        what: 'the service to be ready over HTTPS',
        timeoutMs: 60_000,
        intervalMs: 100,
      });
      const res = await get(https, childPort, '/tenant/apikeys?limit=1', {
        'x-api-key': env.CDP_INITIAL_ADMIN_KEY!,
      });
      expect(res.status).toBe(200);
    } finally {
      expect(await child.stop()).toEqual({ code: 0, signal: null });
      if (env.DATABASE_SCHEMA) await dropSchema(process.env.DATABASE_URL!, env.DATABASE_SCHEMA);
    }
  });

  it('does not answer plain HTTP on the TLS port', async () => {
    const answer = await get(http, port, '/health').then(
      (r) => r.status,
      () => 'refused',
    );
    expect(answer).not.toBe(200);
  });
});

describe('behind a TLS-terminating proxy (TRUST_PROXY)', () => {
  let svc: TestService;
  let proxied: App;
  const inject = async (url: string, headers: Record<string, string> = {}) =>
    toReply(await proxied.inject({ method: 'GET', url, headers, remoteAddress: '10.0.0.1' }));

  beforeAll(async () => {
    svc = await startTestService();
    // The same service as started with TRUST_PROXY=10.0.0.1 (the proxy's address).
    proxied = await buildApp({ ...svc.rt.deps, config: { ...svc.config, trustProxy: '10.0.0.1' } });
    await proxied.ready();
  });
  afterAll(async () => {
    await proxied?.close();
    await svc?.close();
  });

  it('refuses a request that did not arrive over HTTPS: 403 HTTPS_REQUIRED', async () => {
    const res = await inject('/tenant/apikeys', { 'x-api-key': svc.ws.adminKey });
    expectError(res, 403, 'HTTPS_REQUIRED');
    expectError(await inject('/tenant/apikeys', { 'x-forwarded-proto': 'http' }), 403, 'HTTPS_REQUIRED');
  });

  it('serves a request the proxy forwarded from HTTPS', async () => {
    const res = await inject('/tenant/apikeys?limit=1', {
      'x-api-key': svc.ws.adminKey,
      'x-forwarded-proto': 'https',
    });
    expect(res.status).toBe(200);
  });

  it('ignores X-Forwarded-Proto from anyone but the configured proxy', async () => {
    const res = toReply(
      await proxied.inject({
        method: 'GET',
        url: '/tenant/apikeys',
        headers: { 'x-api-key': svc.ws.adminKey, 'x-forwarded-proto': 'https' },
        remoteAddress: '203.0.113.9',
      }),
    );
    expectError(res, 403, 'HTTPS_REQUIRED');
  });

  it('still answers /health and /ready over plain HTTP, for the load balancer', async () => {
    expect((await inject('/health')).status).toBe(200);
    expect((await inject('/health?probe=1')).status).toBe(200);
    expect((await inject('/ready')).status).toBe(200);
  });
});

describe('health, readiness and the framework’s own errors', () => {
  let svc: TestService;
  let app: App;
  let port: number;
  let release: () => void = () => {};
  let entered: Promise<void>;

  beforeAll(async () => {
    svc = await startTestService();
    app = await buildApp(svc.rt.deps);
    let signalEntered: () => void = () => {};
    entered = new Promise((r) => {
      signalEntered = r;
    });
    // A request that stays in flight until the test lets it go, to observe draining.
    app.get('/test/slow', { config: { auth: 'public' } }, async () => {
      signalEntered();
      await new Promise<void>((r) => {
        release = r;
      });
      return { status: 'done' };
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    port = (app.server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    release();
    await app?.close();
    // Storage was closed on purpose by the last test; stop what is left, then drop the schema.
    await svc?.rt.stop().catch(() => {});
    await svc?.close().catch(() => {});
  });

  it('answers /health 200 {status:"ok"} without a key', async () => {
    const res = await get(http, port, '/health');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok' });
  });

  it('answers /ready 200 while storage answers', async () => {
    const res = await get(http, port, '/ready');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok' });
  });

  it('answers a request that is not HTTP at all in the envelope: 400', async () => {
    const answer = await raw(port, 'HELLO WORLD\r\n\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer).toMatch(/content-type: application\/json/i);
    expect(rawBody(answer)).toMatchObject({ status: 'error', error_code: 'VALIDATION_ERROR' });
  });

  it('answers oversized request headers in the envelope: 431 HEADERS_TOO_LARGE', async () => {
    const answer = await raw(port, `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(answer).toMatch(/^HTTP\/1\.1 431 /);
    expect(rawBody(answer)).toMatchObject({ status: 'error', error_code: 'HEADERS_TOO_LARGE' });
  });

  it('answers a request arriving while draining with 503 UNAVAILABLE, and finishes the one in flight', async () => {
    // On one keep-alive connection: the first request is in flight when the drain starts, the
    // second arrives during the drain.
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    socket.on('data', (d) => {
      text += d.toString();
    });
    let ended = false;
    socket.on('close', () => {
      ended = true;
    });
    let requests = 0;
    app.server.on('request', () => requests++);
    socket.write('GET /test/slow HTTP/1.1\r\nHost: x\r\n\r\n');
    await entered;
    const closing = app.close();
    socket.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
    await waitUntil(() => requests === 2, { what: 'the second request to reach the server' });
    release();
    await closing;
    // Both answers written, the drained server closes the connection.
    await waitUntil(() => ended, { what: 'the server to close the connection', timeoutMs: 3000 });
    socket.destroy();

    expect(text).toMatch(/^HTTP\/1\.1 200 /);
    expect(text).toContain('{"status":"done"}');
    const second = text.slice(text.indexOf('HTTP/1.1', 10));
    expect(second).toMatch(/^HTTP\/1\.1 503 /);
    expect(second).toMatch(/retry-after: \d+/i);
    expect(rawBody(second)).toMatchObject({ status: 'error', error_code: 'UNAVAILABLE' });
  });

  it('answers /ready 503 UNAVAILABLE with Retry-After once storage is gone, and /health still 200', async () => {
    await svc.rt.deps.db.close();
    const ready = await svc.call('GET', '/ready', { key: null });
    expectError(ready, 503, 'UNAVAILABLE');
    expect(Number(ready.headers['retry-after'])).toBeGreaterThan(0);
    expect((await svc.call('GET', '/health', { key: null })).status).toBe(200);
    // Any route needing storage says the same, not 500.
    const keyed = await svc.call('GET', '/tenant/apikeys', { key: `cdp_sk_${'Q'.repeat(43)}` });
    expectError(keyed, 503, 'UNAVAILABLE');
  });
});
