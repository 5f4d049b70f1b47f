/**
 * Webhook delivery (issue 10), on each engine: 20 workspaces × 50 subscriptions = 1,000
 * subscriptions to `profile.created`, created through the API (`POST /system/workspaces`,
 * `POST /tenant/webhooks`), all pointing at one local receiver (node:http on 127.0.0.1 in this
 * process, answering 204 at once and recording when each delivery arrived). Every `identify` of a
 * new person makes one `profile.created` fact in its workspace, so 50 deliveries.
 *
 * 1. Steady: BENCH_WEBHOOK_EVENTS events (default 100) at BENCH_WEBHOOK_RATE events/s (default 2,
 *    i.e. 100 deliveries/s offered), round-robin over the 20 workspaces. Latency p50/p99 from
 *    each event's 202 to the receipt of each of its 50 deliveries (target p99 ≤ 1 s with a
 *    healthy receiver), and from the fact's `created_at` (the outbox write, in the body) to the
 *    receipt. Every expected delivery must arrive exactly once (counted by X-Service-Delivery,
 *    and per subscription and fact).
 * 2. Backlog, twice: BENCH_WEBHOOK_BURST events (default 100, so 5,000 deliveries) sent at once;
 *    the drain rate (deliveries/s between the 10th and the 90th percentile of their receipts) is
 *    the service's delivery throughput, printed with the service process's CPU use meanwhile.
 *    First with a receiver that answers `Connection: close` (so every attempt opens a new
 *    connection, as the sender did before it kept connections alive), then with the same receiver
 *    keeping connections alive; the second over the first is the effect of keep-alive, and the
 *    receiver's count of connections opened says how many were reused. Each has its ceiling,
 *    measured in the same run: a bare node:http client in its own process POSTing a real delivery
 *    body and headers to the same receiver, a new connection per request (`agent: false`) for the
 *    first and a keep-alive agent for the second, with as many requests in flight as the service
 *    has delivery slots (`webhookPolicy.concurrency`; BENCH_WEBHOOK_CLIENT_CONCURRENCY overrides).
 *
 * Last, the service's own account (deliveries by status, attempts, put-off jobs) read from its
 * database. BENCH_WEBHOOK_TRACE=1 also prints the backlog's receipts per second. BENCH_WEBHOOK_TLS=1
 * serves the receiver over https (a self-signed certificate for 127.0.0.1 made with the openssl
 * command, trusted by the service through NODE_EXTRA_CA_CERTS), so that a new connection costs a TLS
 * handshake as it does with real receivers.
 *
 *   npm run bench -- webhooks                                   # ≈ 2.5 min per engine
 *   BENCH_ENGINES=postgres BENCH_WEBHOOK_RATE=4 npm run bench -- webhooks
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { webhookPolicy } from '../src/modules/webhooks/policy';
import { type EngineName, engines, note, ROOT, report, type Service, sleep, startService } from './lib';

const WORKSPACES = 20;
const SUBS_PER_WORKSPACE = 50; // the per-workspace limit
const EVENTS = Number(process.env.BENCH_WEBHOOK_EVENTS ?? 100);
const RATE = Number(process.env.BENCH_WEBHOOK_RATE ?? 2);
const BURST = Number(process.env.BENCH_WEBHOOK_BURST ?? 100);
/** As many requests in flight as the service's sender allows itself (its job slots), unless overridden. */
const CLIENT_CONCURRENCY = Number(
  process.env.BENCH_WEBHOOK_CLIENT_CONCURRENCY ??
    (webhookPolicy as { concurrency?: number }).concurrency ??
    8,
);
const CLIENT_SECONDS = 5;
/** How long to wait for the last deliveries of a phase before counting the rest as missing. */
const SETTLE_TIMEOUT_MS = 90_000;
const TARGET_P99_MS = 1000;
/** Serve the receiver over https (a throwaway certificate the service trusts), as real receivers are. */
const TLS = process.env.BENCH_WEBHOOK_TLS === '1';

// ---------------------------------------------------------------------------------------------
// The receiver

interface Receipt {
  at: number; // Date.now() when the body was complete
  path: string;
  deliveryId: string;
  factId: string;
  factCreatedAt: number;
  sourceEventId: string;
}

interface Receiver {
  url: string;
  receipts: Receipt[];
  /** Requests whose body or headers did not parse as a delivery. */
  malformed: number;
  /** Requests to /ceiling (the raw client), counted only. */
  ceilingHits: number;
  /** One real delivery (body and headers), for the raw client to send the same bytes. */
  sample: { body: string; headers: Record<string, string> } | null;
  /** TCP connections accepted so far. */
  connections: number;
  /** Answer `Connection: close`, so that a client cannot reuse the connection. */
  closeEach: boolean;
  close(): Promise<void>;
}

interface Certificate {
  key: string;
  cert: string;
  /** The certificate's file, for NODE_EXTRA_CA_CERTS. */
  file: string;
  remove(): void;
}

/** A self-signed certificate for 127.0.0.1, made with the openssl command, valid for a day. */
function makeCertificate(): Certificate {
  const dir = mkdtempSync(join(tmpdir(), 'cdp-bench-tls-'));
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1']
      .concat(['-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'])
      .concat(['-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')]),
    { stdio: 'ignore' },
  );
  return {
    key: readFileSync(join(dir, 'key.pem'), 'utf8'),
    cert: readFileSync(join(dir, 'cert.pem'), 'utf8'),
    file: join(dir, 'cert.pem'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

async function startReceiver(tls: Certificate | null): Promise<Receiver> {
  const r: Receiver = {
    url: '',
    receipts: [],
    malformed: 0,
    ceilingHits: 0,
    sample: null,
    connections: 0,
    closeEach: false,
    close: async () => {},
  };
  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = Date.now();
      res.writeHead(204, r.closeEach ? { connection: 'close' } : {}).end();
      const path = req.url ?? '/';
      if (path === '/ceiling') {
        r.ceilingHits++;
        return;
      }
      const body = Buffer.concat(chunks).toString('utf8');
      try {
        const b = JSON.parse(body) as { id: string; created_at: string; data: { source_event_id?: string } };
        const deliveryId = req.headers['x-service-delivery'];
        if (typeof deliveryId !== 'string') throw new Error('no X-Service-Delivery');
        r.receipts.push({
          at,
          path,
          deliveryId,
          factId: b.id,
          factCreatedAt: Date.parse(b.created_at),
          sourceEventId: b.data.source_event_id ?? '',
        });
        if (!r.sample) {
          const headers: Record<string, string> = {};
          for (const [k, v] of Object.entries(req.headers)) {
            if (typeof v === 'string' && !['host', 'connection', 'content-length'].includes(k))
              headers[k] = v;
          }
          r.sample = { body, headers };
        }
      } catch {
        r.malformed++;
      }
    });
  };
  const server = tls
    ? https.createServer({ key: tls.key, cert: tls.cert }, handler)
    : http.createServer(handler);
  server.on('connection', () => r.connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  r.url = `${tls ? 'https' : 'http'}://127.0.0.1:${(server.address() as AddressInfo).port}`;
  r.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return r;
}

// ---------------------------------------------------------------------------------------------
// The ceiling: a bare node:http client in its own process

const RAW_CLIENT_SOURCE = `
import http from 'node:http';
import https from 'node:https';
const { url, body, headers, concurrency, seconds, keepAlive, ca } = JSON.parse(process.env.RAW_CLIENT);
const client = url.startsWith('https:') ? https : http;
const until = Date.now() + seconds * 1000;
const agent = keepAlive ? new client.Agent({ keepAlive: true, maxSockets: concurrency, ca }) : false;
let ok = 0, errors = 0;
const one = () => new Promise((resolve) => {
  const req = client.request(url, { method: 'POST', agent, ca,
    headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
    (res) => { res.resume(); res.on('end', () => { if (res.statusCode >= 200 && res.statusCode < 300) ok++; else errors++; resolve(); }); });
  req.on('error', () => { errors++; resolve(); });
  req.end(body);
});
const t0 = performance.now();
await Promise.all(Array.from({ length: concurrency }, async () => { while (Date.now() < until) await one(); }));
process.stdout.write(JSON.stringify({ ok, errors, seconds: (performance.now() - t0) / 1000 }));
`;

async function rawClientRate(
  receiver: Receiver,
  keepAlive: boolean,
  ca: string | undefined,
): Promise<{ rps: number; ok: number; errors: number; concurrency: number }> {
  const sample = receiver.sample ?? { body: JSON.stringify({ id: 'x', data: {} }), headers: {} };
  const child = spawn(process.execPath, ['--input-type=module', '-e', RAW_CLIENT_SOURCE], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      RAW_CLIENT: JSON.stringify({
        url: `${receiver.url}/ceiling`,
        body: sample.body,
        headers: sample.headers,
        concurrency: CLIENT_CONCURRENCY,
        seconds: CLIENT_SECONDS,
        keepAlive,
        ca,
      }),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), (CLIENT_SECONDS + 20) * 1000);
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  clearTimeout(timer);
  if (code !== 0) throw new Error(`raw client exited ${code}: ${err}`);
  const r = JSON.parse(out) as { ok: number; errors: number; seconds: number };
  return { rps: r.ok / r.seconds, ok: r.ok, errors: r.errors, concurrency: CLIENT_CONCURRENCY };
}

// ---------------------------------------------------------------------------------------------
// Setup through the API

interface Workspace {
  index: number;
  key: string;
}

async function call(
  svc: Service,
  method: string,
  path: string,
  auth: Record<string, string>,
  body?: unknown,
) {
  const res = await fetch(`${svc.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...auth },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text) as { data: Record<string, unknown> };
}

/** Runs fn over items with at most `limit` in flight. */
async function pool<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

async function setUp(svc: Service, operatorToken: string, receiverUrl: string): Promise<Workspace[]> {
  const workspaces: Workspace[] = [{ index: 0, key: svc.adminKey }];
  for (let i = 1; i < WORKSPACES; i++) {
    const created = await call(
      svc,
      'POST',
      '/system/workspaces',
      { authorization: `Bearer ${operatorToken}` },
      { name: `bench webhooks ${i}` },
    );
    const key = (created.data.api_key as { api_key: string }).api_key;
    // The default limit (1,000 requests a minute) would do; raised as for the bench's own workspace.
    await call(
      svc,
      'PATCH',
      '/tenant/settings',
      { 'x-api-key': key },
      {
        rate_limits: { requests_per_minute: 100_000_000, batch_events_per_minute: 1_000_000_000 },
      },
    );
    workspaces.push({ index: i, key });
  }
  const subs = workspaces.flatMap((w) => Array.from({ length: SUBS_PER_WORKSPACE }, (_, s) => ({ w, s })));
  await pool(subs, 8, async ({ w, s }) => {
    await call(
      svc,
      'POST',
      '/tenant/webhooks',
      { 'x-api-key': w.key },
      {
        url: `${receiverUrl}/w${w.index}/s${s}`,
        events: ['profile.created'],
      },
    );
  });
  return workspaces;
}

// ---------------------------------------------------------------------------------------------
// Sending events

interface Sent {
  eventId: string;
  workspace: number;
  ackAt: number; // Date.now() at the 202
}

async function ingestOne(svc: Service, w: Workspace): Promise<Sent> {
  const res = await fetch(`${svc.url}/api/ingest`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': w.key },
    body: JSON.stringify({
      event_type: 'identify',
      event_name: 'Signed Up',
      identity: `bench-${randomUUID()}@example.com`,
      payload: { first_name: 'Bench', plan: 'pro' },
    }),
  });
  const ackAt = Date.now();
  const text = await res.text();
  if (res.status !== 202) throw new Error(`ingest: ${res.status} ${text.slice(0, 300)}`);
  return { eventId: (JSON.parse(text) as { event_id: string }).event_id, workspace: w.index, ackAt };
}

/** `count` events at `rate` per second (Infinity: 10 in flight), workspace i % 20 for the i-th. */
async function sendEvents(
  svc: Service,
  workspaces: Workspace[],
  count: number,
  rate: number,
  offset: number,
) {
  const sent: Sent[] = [];
  if (!Number.isFinite(rate)) {
    const idx = Array.from({ length: count }, (_, i) => i);
    await pool(idx, 10, async (i) => {
      sent.push(await ingestOne(svc, workspaces[(offset + i) % workspaces.length]!));
    });
    return sent;
  }
  const t0 = performance.now();
  const inflight: Promise<void>[] = [];
  for (let i = 0; i < count; i++) {
    const wait = t0 + (i * 1000) / rate - performance.now();
    if (wait > 0) await sleep(wait);
    inflight.push(
      ingestOne(svc, workspaces[(offset + i) % workspaces.length]!).then((s) => {
        sent.push(s);
      }),
    );
  }
  await Promise.all(inflight);
  return sent;
}

/** Waits until every expected delivery of `sent` arrived, or SETTLE_TIMEOUT_MS passed without progress. */
async function waitForDeliveries(receiver: Receiver, sent: Sent[]): Promise<void> {
  const ids = new Set(sent.map((s) => s.eventId));
  const expected = sent.length * SUBS_PER_WORKSPACE;
  let seen = 0;
  let scanned = 0;
  let lastProgress = Date.now();
  for (;;) {
    const before = seen;
    for (; scanned < receiver.receipts.length; scanned++) {
      if (ids.has(receiver.receipts[scanned]!.sourceEventId)) seen++;
    }
    if (seen >= expected) break;
    if (seen > before) lastProgress = Date.now();
    else if (Date.now() - lastProgress > SETTLE_TIMEOUT_MS) break;
    await sleep(100);
  }
  // A few more seconds for duplicates (a re-run attempt) to show up.
  await sleep(2000);
}

// ---------------------------------------------------------------------------------------------
// Figures

const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** CPU seconds (user + system, every thread) a process has used so far (Linux /proc). */
function cpuSecondsOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
}

const pct = (sorted: number[], q: number) =>
  sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;

interface Tally {
  expected: number;
  unique: number;
  duplicateDeliveries: number; // the same X-Service-Delivery received more than once (extra copies)
  doubleFanOut: number; // the same subscription and fact under two delivery ids
  missing: number;
  unexpected: number; // deliveries of this phase's facts to another workspace's subscription
  ofPhase: Receipt[]; // first receipt of each delivery id, of this phase's facts
}

function tally(receipts: Receipt[], sent: Sent[]): Tally {
  const bySource = new Map(sent.map((s) => [s.eventId, s]));
  const byDelivery = new Map<string, Receipt>();
  const pairs = new Set<string>();
  let duplicateDeliveries = 0;
  let doubleFanOut = 0;
  let unexpected = 0;
  for (const r of receipts) {
    const s = bySource.get(r.sourceEventId);
    if (!s) continue;
    if (byDelivery.has(r.deliveryId)) {
      duplicateDeliveries++;
      continue;
    }
    byDelivery.set(r.deliveryId, r);
    const pair = `${r.path} ${r.factId}`;
    if (pairs.has(pair)) doubleFanOut++;
    pairs.add(pair);
    if (!r.path.startsWith(`/w${s.workspace}/`)) unexpected++;
  }
  const expected = sent.length * SUBS_PER_WORKSPACE;
  return {
    expected,
    unique: pairs.size,
    duplicateDeliveries,
    doubleFanOut,
    missing: Math.max(0, expected - pairs.size),
    unexpected,
    ofPhase: [...byDelivery.values()],
  };
}

function tallyNote(phase: string, t: Tally): string {
  return (
    `${phase}: ${t.unique} of ${t.expected} expected deliveries arrived, ${t.missing} missing, ` +
    `${t.duplicateDeliveries} duplicate receipts (same X-Service-Delivery), ${t.doubleFanOut} double fan-outs ` +
    `(same subscription and fact, two delivery ids), ${t.unexpected} unexpected`
  );
}

async function measureEngine(engine: EngineName): Promise<void> {
  const certificate = TLS ? makeCertificate() : null;
  const receiver = await startReceiver(certificate);
  const operatorToken = randomBytes(24).toString('base64url');
  const svc = await startService({
    engine,
    env: {
      CDP_ALLOW_PRIVATE_WEBHOOKS: '1',
      CDP_OPERATOR_TOKEN: operatorToken,
      ...(certificate ? { NODE_EXTRA_CA_CERTS: certificate.file } : {}),
    },
  });
  try {
    const t0 = performance.now();
    const workspaces = await setUp(svc, operatorToken, receiver.url);
    note(
      `${engine}: ${WORKSPACES} workspaces × ${SUBS_PER_WORKSPACE} subscriptions created through the API in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );

    // 1. Steady rate: latency.
    const steadyStart = Date.now();
    const steady = await sendEvents(svc, workspaces, EVENTS, RATE, 0);
    const steadySent = Date.now();
    await waitForDeliveries(receiver, steady);
    const s = tally(receiver.receipts, steady);
    const ackOf = new Map(steady.map((e) => [e.eventId, e.ackAt]));
    const fromAck = s.ofPhase.map((r) => r.at - ackOf.get(r.sourceEventId)!).sort((a, b) => a - b);
    const fromFact = s.ofPhase.map((r) => r.at - r.factCreatedAt).sort((a, b) => a - b);
    const lastAt = Math.max(...s.ofPhase.map((r) => r.at));
    const firstAt = Math.min(...s.ofPhase.map((r) => r.at));
    const steadyRate = lastAt > firstAt ? (s.unique * 1000) / (lastAt - firstAt) : Number.NaN;
    note(
      `${engine} steady: ${steady.length} events in ${((steadySent - steadyStart) / 1000).toFixed(1)} s ` +
        `(${RATE}/s, ${RATE * SUBS_PER_WORKSPACE} deliveries/s offered); last delivery ` +
        `${((lastAt - steadySent) / 1000).toFixed(1)} s after the last 202 (${steadyRate.toFixed(0)} deliveries/s from first to last); ` +
        `event→delivery p50 ${pct(fromAck, 0.5)} ms, max ${pct(fromAck, 1)} ms; ` +
        `fact→delivery p50 ${pct(fromFact, 0.5)} ms, p99 ${pct(fromFact, 0.99)} ms`,
    );
    note(tallyNote(`${engine} steady`, s));
    report({
      name: `webhooks event→delivery latency p50, ${RATE} events/s × 50 subscriptions (${engine})`,
      value: pct(fromAck, 0.5),
      unit: 'ms',
      target: 'info',
    });
    report({
      name: `webhooks event→delivery latency p99, ${RATE} events/s × 50 subscriptions (${engine})`,
      value: pct(fromAck, 0.99),
      unit: 'ms',
      ceiling: { value: pct(fromFact, 0.99), unit: 'ms p99 from the fact (outbox) write' },
      target: `≤ ${TARGET_P99_MS} ms`,
      pass: pct(fromAck, 0.99) <= TARGET_P99_MS && s.missing === 0,
    });

    // 2. Backlog, first with a new connection per attempt (the receiver closes each), then with
    // connections kept alive: throughput, and the effect of keep-alive.
    const backlog = async (keepAlive: boolean, offset: number) => {
      const label = `${engine} backlog ${keepAlive ? 'kept alive' : 'a connection per attempt'}`;
      receiver.closeEach = !keepAlive;
      const connections0 = receiver.connections;
      const cpu0 = cpuSecondsOf(svc.pid);
      const wall0 = performance.now();
      const burst = await sendEvents(svc, workspaces, BURST, Number.POSITIVE_INFINITY, offset);
      await waitForDeliveries(receiver, burst);
      const cpu = cpuSecondsOf(svc.pid) - cpu0;
      const wall = (performance.now() - wall0) / 1000;
      const opened = receiver.connections - connections0;
      const b = tally(receiver.receipts, burst);
      const times = b.ofPhase.map((r) => r.at).sort((x, y) => x - y);
      const lo = pct(times, 0.1);
      const hi = pct(times, 0.9);
      const drained = times.filter((t) => t >= lo && t <= hi).length;
      const drainRate = hi > lo ? (drained * 1000) / (hi - lo) : Number.NaN;
      const firstAck = Math.min(...burst.map((e) => e.ackAt));
      note(
        `${label}: ${burst.length} events at once; first delivery ${((times[0]! - firstAck) / 1000).toFixed(1)} s ` +
          `after the first 202, last ${((times[times.length - 1]! - firstAck) / 1000).toFixed(1)} s; ` +
          `${drained} deliveries between the 10th and 90th percentile in ${((hi - lo) / 1000).toFixed(1)} s; ` +
          `${opened} connections opened for ${b.unique} deliveries`,
      );
      note(tallyNote(label, b));
      if (process.env.BENCH_WEBHOOK_TRACE) {
        const perSecond: number[] = [];
        for (const t of times)
          perSecond[Math.floor((t - firstAck) / 1000)] =
            (perSecond[Math.floor((t - firstAck) / 1000)] ?? 0) + 1;
        note(
          `${label} receipts per second from the first 202: ${Array.from(perSecond, (n) => n ?? 0).join(' ')}`,
        );
      }
      note(
        `${label}: the service process used ${cpu.toFixed(1)} CPU s in ${wall.toFixed(1)} s ` +
          `(${((100 * cpu) / wall).toFixed(0)}% of one core; ${((1000 * cpu) / Math.max(1, b.unique)).toFixed(2)} ms per delivery, ` +
          `ingest and processing of the ${burst.length} events included${engine === 'pglite' ? ', the embedded database too' : ''}); ` +
          `machine load average ${loadavg()[0]!.toFixed(1)} on ${cpus().length} cores`,
      );
      // The ceiling, right after, against the same receiver (the service idle).
      const raw = await rawClientRate(receiver, keepAlive, certificate?.cert);
      note(
        `${label}, raw client: ${raw.ok} POSTs of a ${Buffer.byteLength(receiver.sample?.body ?? '')}-byte delivery body ` +
          `in ${CLIENT_SECONDS} s, ${raw.concurrency} in flight, ${keepAlive ? 'connections kept alive' : 'a new connection each'}; ${raw.errors} errors`,
      );
      report({
        name: `webhooks deliveries/s, backlog of ${burst.length * SUBS_PER_WORKSPACE}, ${keepAlive ? 'connections kept alive' : 'a new connection per attempt'} (${engine}${TLS ? ', https' : ''})`,
        value: drainRate,
        unit: 'deliveries/s',
        ceiling: {
          value: raw.rps,
          unit: `POSTs/s raw node:http client, ${keepAlive ? 'keep-alive agent' : 'agent: false'}`,
        },
        target: 'info',
      });
      return { burst, b, drainRate };
    };
    const closing = await backlog(false, EVENTS);
    const kept = await backlog(true, EVENTS + BURST);
    receiver.closeEach = false;
    report({
      name: `webhooks keep-alive: backlog deliveries/s kept alive over a new connection per attempt (${engine}${TLS ? ', https' : ''})`,
      value: kept.drainRate,
      unit: 'deliveries/s',
      ceiling: { value: closing.drainRate, unit: 'deliveries/s with a new connection per attempt' },
      target: 'info',
    });
    if (RATE * SUBS_PER_WORKSPACE > 0.9 * kept.drainRate) {
      note(
        `${engine}: the steady phase offered ${RATE * SUBS_PER_WORKSPACE} deliveries/s, near or above the ` +
          `${kept.drainRate.toFixed(0)}/s the service drains: its latency is mostly queueing`,
      );
    }
    const b = {
      missing: closing.b.missing + kept.b.missing,
      duplicateDeliveries: closing.b.duplicateDeliveries + kept.b.duplicateDeliveries,
      doubleFanOut: closing.b.doubleFanOut + kept.b.doubleFanOut,
      unexpected: closing.b.unexpected + kept.b.unexpected,
      unique: closing.b.unique + kept.b.unique,
      expected: closing.b.expected + kept.b.expected,
    };
    const burst = [...closing.burst, ...kept.burst];
    const ours = new Set([...steady, ...burst].map((e) => e.eventId));
    const foreign = receiver.receipts.filter((r) => !ours.has(r.sourceEventId)).length;
    if (foreign > 0) note(`${engine}: ${foreign} deliveries of facts the bench did not cause`);
    if (receiver.malformed > 0) note(`${engine}: ${receiver.malformed} malformed requests at the receiver`);
    report({
      name: `webhooks fan-out, every delivery exactly once (${engine})`,
      value: s.unique + b.unique,
      unit: 'deliveries',
      ceiling: { value: s.expected + b.expected, unit: 'expected' },
      target: 'all, no duplicates',
      pass:
        s.missing + b.missing === 0 &&
        s.duplicateDeliveries + b.duplicateDeliveries + s.doubleFanOut + b.doubleFanOut === 0 &&
        s.unexpected + b.unexpected + foreign + receiver.malformed === 0,
    });
    const log = svc.stderr().trim();
    if (log) {
      const lines = log.split('\n');
      note(
        `${engine} service stderr: ${lines.length} lines; first: ${lines.slice(0, 3).join(' | ').slice(0, 600)}`,
      );
    } else {
      note(`${engine} service stderr: empty`);
    }
    // The service's own account: attempts made, and attempts put off because their subscription
    // already had its share under way (deliver.job.ts), which wait seconds before they run.
    if (engine === 'pglite') await svc.halt();
    const counts = await svc.withDb(async (db) => {
      const jobs = await db.query<{ total: number; waits: number; queued: number }>(
        `SELECT count(*)::int AS total, (count(*) FILTER (WHERE key LIKE '%wait%'))::int AS waits,
                (count(*) FILTER (WHERE state <> 'succeeded'))::int AS queued
           FROM jobs WHERE queue = 'webhooks.deliver'`,
      );
      const attempts = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_attempts');
      const statuses = await db.query<{ status: string; n: number }>(
        'SELECT status, count(*)::int AS n FROM webhook_deliveries GROUP BY status ORDER BY status',
      );
      return { jobs: jobs.rows[0]!, attempts: attempts.rows[0]!.n, statuses: statuses.rows };
    });
    note(
      `${engine} service side: deliveries ${counts.statuses.map((r) => `${r.status} ${r.n}`).join(', ')}; ` +
        `${counts.attempts} attempts; ${counts.jobs.total} delivery jobs, of which ${counts.jobs.waits} put off ` +
        `(subscription at its share of attempts in flight), ${counts.jobs.queued} not succeeded`,
    );
  } finally {
    await svc.stop();
    await receiver.close();
    certificate?.remove();
  }
}

export default async function run(): Promise<void> {
  for (const engine of await engines()) await measureEngine(engine);
}
