import { createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { dropSchema, freshSchemaName, type TestService, type TestWorkspace } from '../../../test/harness';
import { waitUntil } from '../../../test/wait';
import { loadConfig } from '../../config';
import { createLogger } from '../../platform/logger';
import { createRuntime, type Runtime } from '../../runtime';

/** A receiver on 127.0.0.1 (port 0) whose answers a test scripts, recording every request. */
export interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface Receiver {
  url: string;
  received: Received[];
  /** TCP connections accepted so far (a refused destination adds none; kept-alive ones are reused). */
  connections(): number;
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
  let connections = 0;
  server.on('connection', () => connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  const of = (path: string) => received.filter((r) => r.path === path);
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    connections: () => connections,
    script: (path, answers) => scripts.set(path, [...answers]),
    async waitFor(path, n, timeoutMs = 15_000) {
      await waitUntil(() => of(path).length >= n, {
        what: `${n} requests to ${path}`,
        timeoutMs,
        detail: () => `the receiver has ${of(path).length}`,
      });
      return of(path);
    },
    close: () => new Promise((r) => server.close(() => r())),
  };
}

/** A request as a PeopleReceiver saw it: its body, when it arrived and when it was answered. */
export interface Arrival {
  body: string;
  arrivedAt: number;
  /** 0 while the receiver still holds it. */
  answeredAt: number;
}

/**
 * A receiver on 127.0.0.1 scripted by person: requests whose body names someone in `failing` are
 * answered 500, those naming someone held (`hold`) wait until released; every other one gets 200.
 * Each request is recorded with the times it arrived and was answered (the consent tests compare
 * them with the time a withdrawal answered).
 */
export async function startPeopleReceiver() {
  const arrivals: Arrival[] = [];
  const failing = new Set<string>();
  const holds = new Map<string, Promise<void>>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const arrival: Arrival = {
        body: Buffer.concat(chunks).toString('utf8'),
        arrivedAt: Date.now(),
        answeredAt: 0,
      };
      arrivals.push(arrival);
      const hold = [...holds].find(([who]) => arrival.body.includes(who));
      if (hold) await hold[1];
      res.writeHead([...failing].some((who) => arrival.body.includes(who)) ? 500 : 200).end();
      arrival.answeredAt = Date.now();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    arrivals,
    failing,
    /** Holds every request about `who` until the returned function is called. */
    hold(who: string): () => void {
      let release!: () => void;
      holds.set(
        who,
        new Promise<void>((r) => {
          release = r;
        }),
      );
      return () => {
        holds.delete(who);
        release();
      };
    },
    about: (who: string) => arrivals.filter((a) => a.body.includes(who)),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
export type PeopleReceiver = Awaited<ReturnType<typeof startPeopleReceiver>>;

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

/** The X-Service-Signature of docs/webhooks.md: lowercase hex HMAC-SHA256 of the raw body with the secret. */
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

/**
 * A service a test stops and starts again on the same storage (PGlite in a directory of its own, or
 * a schema of its own on PostgreSQL when DATABASE_URL is set), with other settings each time if it
 * likes; `call` goes to the one running, as the default workspace's admin.
 */
export function restartableService() {
  const adminKey = `cdp_sk_${randomBytes(32).toString('base64url')}`;
  const pgUrl = process.env.DATABASE_URL ?? null;
  const schema = pgUrl ? freshSchemaName() : null;
  const dataDir = pgUrl ? null : mkdtempSync(join(tmpdir(), 'cdp-webhook-restart-'));
  let rt: Runtime | null = null;
  return {
    async start(env: Record<string, string> = {}): Promise<void> {
      const config = loadConfig({
        LOG_LEVEL: 'silent',
        CDP_INITIAL_ADMIN_KEY: adminKey,
        ...env,
        ...(pgUrl ? { DATABASE_URL: pgUrl, DATABASE_SCHEMA: schema! } : { DATA_DIR: dataDir! }),
      });
      rt = await createRuntime(config, createLogger('silent'));
    },
    async stop(): Promise<void> {
      await rt?.stop();
      rt = null;
    },
    async call(method: string, url: string, body?: unknown, key: string = adminKey) {
      const res = await rt!.app!.inject({
        method: method as 'GET',
        url,
        headers: { 'x-api-key': key, ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { payload: JSON.stringify(body) } : {}),
      });
      let parsed: unknown = null;
      try {
        parsed = res.body ? JSON.parse(res.body) : null;
      } catch {
        parsed = null;
      }
      // biome-ignore lint/suspicious/noExplicitAny: test bodies are inspected field by field
      return { status: res.statusCode, body: parsed as any, text: res.body };
    },
    /** The running service's runtime (its database, its app). */
    runtime(): Runtime {
      return rt!;
    },
    adminKey,
    /** Stops it and removes its storage. */
    async remove(): Promise<void> {
      await rt?.stop();
      rt = null;
      if (pgUrl && schema) await dropSchema(pgUrl, schema);
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
