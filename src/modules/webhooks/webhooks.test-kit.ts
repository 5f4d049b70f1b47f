import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'vitest';
import type { TestService, TestWorkspace } from '../../../test/harness';

/** A receiver on 127.0.0.1 (port 0) whose answers a test scripts, recording every request. */
export interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface Receiver {
  url: string;
  received: Received[];
  /** Answers per path, in order; once used up (or for an unscripted path) the answer is 200. */
  script(path: string, answers: Array<{ status: number; headers?: Record<string, string> }>): void;
  /** Waits until `path` has received at least `n` requests. */
  waitFor(path: string, n: number, timeoutMs?: number): Promise<Received[]>;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const received: Received[] = [];
  const scripts = new Map<string, Array<{ status: number; headers?: Record<string, string> }>>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      received.push({ path, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      const next = scripts.get(path)?.shift() ?? { status: 200 };
      res.writeHead(next.status, next.headers ?? {}).end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  const of = (path: string) => received.filter((r) => r.path === path);
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    script: (path, answers) => scripts.set(path, [...answers]),
    async waitFor(path, n, timeoutMs = 15_000) {
      const until = Date.now() + timeoutMs;
      while (of(path).length < n) {
        if (Date.now() > until) throw new Error(`receiver: ${of(path).length} of ${n} requests to ${path}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      return of(path);
    },
    close: () => new Promise((r) => server.close(() => r())),
  };
}

/**
 * Standard Webhooks verification written from the specification (not from our signer): the key is
 * the base64 after `whsec_`, the signed content `{webhook-id}.{webhook-timestamp}.{body}`, the header
 * a space-separated list of `v1,<base64>`; the timestamp must be within 5 minutes.
 */
export function verifyStandardWebhook(
  secret: string,
  r: Received,
  nowSec = Math.floor(Date.now() / 1000),
): boolean {
  const id = String(r.headers['webhook-id']);
  const ts = String(r.headers['webhook-timestamp']);
  if (Math.abs(nowSec - Number(ts)) > 300) return false;
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${ts}.${r.body}`).digest();
  return String(r.headers['webhook-signature'])
    .split(' ')
    .some((part) => {
      const [version, sig] = part.split(',');
      const given = Buffer.from(sig ?? '', 'base64');
      return version === 'v1' && given.length === expected.length && timingSafeEqual(given, expected);
    });
}

/** The contract's X-Service-Signature: lowercase hex HMAC-SHA256 of the raw body with the secret. */
export function verifyServiceSignature(secret: string, r: Received): boolean {
  const expected = createHmac('sha256', secret).update(r.body).digest('hex');
  const given = String(r.headers['x-service-signature']);
  return given.length === expected.length && timingSafeEqual(Buffer.from(given), Buffer.from(expected));
}

/** A subscription to `{rx.url}{path}` (profile.created unless `extra` says otherwise), made by the workspace's admin. */
export async function subscribeTo<T = { id: string; secret: string; enabled: boolean }>(
  svc: TestService,
  rx: Receiver,
  ws: TestWorkspace,
  path: string,
  extra: Record<string, unknown> = {},
): Promise<T> {
  const res = await svc.call('POST', '/tenant/webhooks', {
    key: ws.adminKey,
    body: { url: `${rx.url}${path}`, events: ['profile.created'], ...extra },
  });
  expect(res.status, res.text).toBe(200);
  return res.body.data as T;
}

/** An identify of a new person through the real ingest API: the worker creates a profile, a profile.created fact. */
export async function identifyNew(svc: TestService, ws: TestWorkspace, payload?: Record<string, unknown>) {
  const res = await svc.call('POST', '/api/ingest', {
    key: ws.adminKey,
    body: {
      event_type: 'identify',
      event_name: 'Signed in',
      anonymous_id: randomUUID(),
      identity: `${randomUUID()}@shop.test`,
      ...(payload ? { payload } : {}),
    },
  });
  expect(res.status, res.text).toBe(202);
}

/** The first page of a subscription's deliveries, as the API lists them. */
export async function listDeliveries(svc: TestService, ws: TestWorkspace, hookId: string) {
  const res = await svc.call('GET', `/tenant/webhooks/${hookId}/deliveries`, { key: ws.adminKey });
  expect(res.status, res.text).toBe(200);
  return res.body.data as Array<Record<string, unknown>>;
}
