/**
 * Issue 29: what consent and the audit trail cost ingestion, on each engine (BENCH_ENGINES). Every
 * figure is an "on" rate beside its "off" rate measured in the same run, in interleaved rounds (each
 * pair in alternating order) so both see the same database growth and the same machine noise.
 * Target for each ratio: ≥ 0.95.
 *
 * 1. HTTP ingest, events/s accepted. One child process serves two apps over the same database and
 *    the same group commit (ROLE=api: no worker competes for the cores): the service's own app
 *    ("on": audit sink as wired, every event carrying `consent: {categories: {analytics: true, ads:
 *    false}}`) and a second app whose audit sink does nothing ("off": the same events without a
 *    consent object), as bench/audit.bench.ts builds it. The load runs in this process:
 *    `POST /tenant/ingest/batch` of 1000-event batches, 4 in flight, a counted number of requests
 *    per round (BENCH_CONSENT_BATCHES, 16), of the ≈ 200-byte events of bench/ingest.bench.ts and
 *    again of page-sized ones (≈ 800 bytes, as a browser library sends a view with its page
 *    context: the batch path costs per byte), and single-event `POST /api/ingest` at 10 connections
 *    for 2 s (autocannon), as bench/ingest.bench.ts drives them; BENCH_CONSENT_INGEST_ROUNDS (8)
 *    rounds. Beside each rate, the serving process's CPU per accepted event, on and off (less
 *    noisy than a rate on a shared machine).
 * 2. End-to-end processing, events/s the worker applies to profiles: the real service (`cdp start`,
 *    LOG_LEVEL=debug for its batch lines), halted while a log of BENCH_CONSENT_EVENTS events
 *    (default 20,000 a round, fresh customers each round: the journeys of bench/processing.bench.ts,
 *    ten events per customer: page views, sign-up, a second device merged in, an order) is appended
 *    through the ingest module's append path, then restarted and timed until the log is drained,
 *    BENCH_CONSENT_ROUNDS rounds (2) each way. "on": every event carries the consent object (as a
 *    consent manager's wrapper adds it to every event a page sends), "off": none does. Beside the
 *    rate: the service's CPU per event, and, within the very same batches, their time outside the
 *    `apply consent` step against all of it (the step's own share, which the machine's noise does
 *    not move).
 *
 *   npm run bench -- consent            (BENCH_ENGINES=pglite|postgres to run one engine)
 *   BENCH_CONSENT_EVENTS=50000 BENCH_CONSENT_ROUNDS=1 npm run bench -- consent
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildApp } from '../src/app';
import { loadConfig } from '../src/config';
import { appendEvents, type NewEvent } from '../src/modules/ingest';
import type { App } from '../src/platform/http/types';
import { createLogger } from '../src/platform/logger';
import { createRuntime } from '../src/runtime';
import {
  BENCH_RATE_LIMITS,
  cpuSecondsOf,
  dropSchema,
  type EngineName,
  engines,
  freePort,
  load,
  note,
  PG_URL,
  ROOT,
  report,
  type Service,
  sleep,
  startService,
} from './lib';

const TARGET = 0.95;
/** Rounds of the processing part, each a drain of EVENTS events per variant. */
const ROUNDS = Number(process.env.BENCH_CONSENT_ROUNDS ?? 2);
/** Rounds of each ingest mode (short ones: a few seconds each way). */
const INGEST_ROUNDS = Number(process.env.BENCH_CONSENT_INGEST_ROUNDS ?? 8);
/**
 * Events per variant per round of the processing part: a tenth as many customers, each journey
 * step one pass over them. At least 20,000: with fewer than two PostgreSQL batches (1,000) of
 * customers, the second processing loop always claims the next step of the customers the first
 * one holds, and defers all of it, so the rate measured would be that churn's.
 */
const EVENTS = Number(process.env.BENCH_CONSENT_EVENTS ?? 20_000);
const LOAD_SECONDS = 2;
const WARMUP_SECONDS = 1;
const BATCH = 1000;
const BATCH_CONNECTIONS = 4;
/** Batch requests per variant per round (after one per connection, unmeasured). */
const BATCHES_PER_ROUND = Number(process.env.BENCH_CONSENT_BATCHES ?? 16);
const SINGLE_CONNECTIONS = 10;

const CONSENT = { categories: { analytics: true, ads: false } } as const;

type Variant = 'off' | 'on';
/** Round r runs off then on when r is even, on then off when odd. */
const orderOf = (round: number): [Variant, Variant] => (round % 2 === 0 ? ['off', 'on'] : ['on', 'off']);

// ---------------------------------------------------------------------------------------------
// 1. HTTP ingest: two apps over one database, served by a child process

/**
 * The event of bench/ingest.bench.ts: a product view with a handful of properties (≈ 200 bytes).
 * A batch of 1000 is 202 KB without consent and 258 KB with it, on either side of the body size
 * from which a batch is parsed in slices (SLICED_BODY_BYTES, 256 KiB: ≈ 0.5 µs an event more).
 */
const viewEvent = (i: number, consent: boolean) => ({
  event_type: 'track',
  event_name: 'Product Viewed',
  anonymous_id: randomUUID(),
  payload: { product_id: `p-${i % 500}`, price: 19.99, currency: 'USD', category: 'mugs', position: i % 20 },
  ...(consent ? { consent: CONSENT } : {}),
});

/**
 * The same view as a browser library sends it, with what it knows of the page (≈ 800 bytes, about
 * the size of an analytics.js `track` call with its context): the consent object's 57 bytes are a
 * quarter of the small event, a fourteenth of this one, and the batch path's cost is per byte.
 */
const pageEvent = (i: number, consent: boolean) => {
  const e = viewEvent(i, consent);
  return {
    ...e,
    payload: {
      ...e.payload,
      name: `Ceramic mug no. ${i % 500}`,
      brand: 'Example Pottery',
      url: `https://shop.example.com/products/mug-${i % 500}?utm_source=newsletter&utm_medium=email`,
      path: `/products/mug-${i % 500}`,
      referrer: 'https://mail.example.com/',
      title: `Ceramic mug no. ${i % 500} | Example Pottery`,
      user_agent:
        'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15',
      locale: 'en-GB',
      timezone: 'Europe/London',
      screen: { width: 1512, height: 982, density: 2 },
      campaign: { source: 'newsletter', medium: 'email', name: 'spring-sale' },
      library: { name: 'analytics.js', version: '5.2.0' },
    },
  };
};

function bodiesOf(consent: boolean) {
  const batchOf = (make: typeof viewEvent) =>
    Array.from({ length: 8 }, (_, b) =>
      JSON.stringify(Array.from({ length: BATCH }, (_, i) => make(b * BATCH + i, consent))),
    );
  return {
    single: Array.from({ length: 2000 }, (_, i) => JSON.stringify(viewEvent(i, consent))),
    batch: batchOf(viewEvent),
    pageBatch: batchOf(pageEvent),
  };
}

interface Served {
  /** The service's app (its audit sink). */
  audited: string;
  /** The same runtime's deps, audit sink doing nothing. */
  plain: string;
  adminKey: string;
}

/**
 * The child's side (`CONSENT_BENCH_SERVE=<engine>`): both apps listening, their addresses on one
 * stdout line; when its stdin closes (the parent's stop, or the parent gone) both close, the
 * runtime stops and the database goes. Not a signal: bench/lib.ts exits on SIGTERM at once.
 */
async function serve(engine: EngineName): Promise<void> {
  const adminKey = `cdp_sk_${randomBytes(32).toString('base64url')}`;
  const env: Record<string, string> = { LOG_LEVEL: 'silent', CDP_INITIAL_ADMIN_KEY: adminKey, ROLE: 'api' };
  let dataDir: string | null = null;
  let schema: string | null = null;
  if (engine === 'pglite') {
    dataDir = mkdtempSync(join(tmpdir(), 'cdp-bench-consent-'));
    env.DATA_DIR = dataDir;
  } else {
    schema = `bench_${randomBytes(5).toString('hex')}`;
    env.DATABASE_URL = PG_URL;
    env.DATABASE_SCHEMA = schema;
  }
  const rt = await createRuntime(loadConfig(env), createLogger('silent'));
  const plain = await buildApp({ ...rt.deps, audit: { write: async () => {} } });
  const stop = async () => {
    await plain.close().catch(() => {});
    await rt.stop().catch(() => {});
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    if (schema) await dropSchema(PG_URL, schema).catch(() => {});
    process.exit(0);
  };
  process.stdin.resume();
  process.stdin.once('end', () => void stop());
  await rt.deps.db.query('UPDATE workspaces SET settings = settings || $2::jsonb WHERE id = $1', [
    rt.bootstrap!.workspaceId,
    JSON.stringify(BENCH_RATE_LIMITS),
  ]);
  const listen = async (app: App) => {
    await app.listen({ port: await freePort(), host: '127.0.0.1' });
    return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  };
  const served: Served = { audited: await listen(rt.app!), plain: await listen(plain), adminKey };
  process.stdout.write(`${JSON.stringify(served)}\n`);
}

async function startServer(engine: EngineName): Promise<Served & { pid: number; stop(): Promise<void> }> {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url)], {
    cwd: ROOT,
    env: { ...process.env, CONSENT_BENCH_SERVE: engine },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (d: string) => {
    stderr = (stderr + d).slice(-20_000);
  });
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.stdin!.end();
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    await exited;
    clearTimeout(timer);
  };
  process.once('exit', () => child.kill('SIGKILL'));
  const served = await new Promise<Served>((resolve, reject) => {
    let out = '';
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (d: string) => {
      out += d;
      const line = out.split('\n').find((l) => l.startsWith('{"audited"'));
      if (line) resolve(JSON.parse(line) as Served);
    });
    child.once('exit', (code) => reject(new Error(`server exited (${code}) before serving:\n${stderr}`)));
  });
  return { ...served, pid: child.pid!, stop };
}

/** One measured run of one variant: accepted events, over how long, and what went wrong. */
interface Run {
  events: number;
  seconds: number;
  non2xx: number;
  errors: number;
  p99: number;
}

interface Totals {
  events: number;
  seconds: number;
  /** CPU seconds of the serving process during the measured runs. */
  cpu: number;
  /** Events/s of each round. */
  rates: number[];
  non2xx: number;
  errors: number;
  p99: number[];
}
const emptyTotals = (): Totals => ({
  events: 0,
  seconds: 0,
  cpu: 0,
  rates: [],
  non2xx: 0,
  errors: 0,
  p99: [],
});
const add = (t: Totals, r: Run) => {
  t.events += r.events;
  t.seconds += r.seconds;
  t.rates.push(r.events / r.seconds);
  t.non2xx += r.non2xx;
  t.errors += r.errors;
  t.p99.push(r.p99);
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

/**
 * `count` batch requests, `connections` in flight, timed from the first send to the last answer. A
 * 1000-event batch takes up to a second on a loaded machine, so a time window of a few seconds
 * would count a handful of answers and whichever straddled its end: counted requests, timed, don't.
 */
async function sendBatches(
  url: string,
  headers: Record<string, string>,
  bodies: readonly string[],
  count: number,
  connections: number,
): Promise<Run> {
  let next = 0;
  const run: Run = { events: 0, seconds: 0, non2xx: 0, errors: 0, p99: 0 };
  const latencies: number[] = [];
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (next < count) {
        const body = bodies[next++ % bodies.length]!;
        const t = performance.now();
        try {
          const res = await fetch(url, { method: 'POST', headers, body });
          await res.arrayBuffer();
          if (res.status === 202) run.events += BATCH;
          else run.non2xx++;
        } catch {
          run.errors++;
        }
        latencies.push(performance.now() - t);
      }
    }),
  );
  run.seconds = (performance.now() - t0) / 1000;
  latencies.sort((x, y) => x - y);
  run.p99 = Math.round(latencies[Math.floor(latencies.length * 0.99)] ?? 0);
  return run;
}

async function measureIngest(engine: EngineName): Promise<void> {
  const server = await startServer(engine);
  try {
    const headers = { 'x-api-key': server.adminKey, 'content-type': 'application/json' };
    const bodies = { off: bodiesOf(false), on: bodiesOf(true) };
    const base = { off: server.plain, on: server.audited };
    // Each app accepts its events before anything is timed (and "on" stores their consent).
    for (const v of ['off', 'on'] as const) {
      const res = await fetch(`${base[v]}/tenant/ingest/batch`, {
        method: 'POST',
        headers,
        body: bodies[v].batch[0],
      });
      if (res.status !== 202) throw new Error(`batch (${v}) answered ${res.status}: ${await res.text()}`);
    }
    const single = (v: Variant, duration: number) => ({
      url: `${base[v]}/api/ingest`,
      method: 'POST' as const,
      headers,
      bodies: bodies[v].single,
      connections: SINGLE_CONNECTIONS,
      duration,
      warmup: 0,
    });
    const batchUrl = (v: Variant) => `${base[v]}/tenant/ingest/batch`;
    const modes: Array<{
      name: string;
      what: string;
      warm: (v: Variant) => Promise<unknown>;
      run: (v: Variant) => Promise<Run>;
    }> = [
      {
        name: `batch of ${BATCH} @${BATCH_CONNECTIONS}`,
        what: `${BATCHES_PER_ROUND} requests`,
        warm: (v) => sendBatches(batchUrl(v), headers, bodies[v].batch, BATCH_CONNECTIONS, BATCH_CONNECTIONS),
        run: (v) => sendBatches(batchUrl(v), headers, bodies[v].batch, BATCHES_PER_ROUND, BATCH_CONNECTIONS),
      },
      {
        name: `batch of ${BATCH} page-sized events @${BATCH_CONNECTIONS}`,
        what: `${BATCHES_PER_ROUND} requests`,
        warm: (v) =>
          sendBatches(batchUrl(v), headers, bodies[v].pageBatch, BATCH_CONNECTIONS, BATCH_CONNECTIONS),
        run: (v) =>
          sendBatches(batchUrl(v), headers, bodies[v].pageBatch, BATCHES_PER_ROUND, BATCH_CONNECTIONS),
      },
      {
        name: `single @${SINGLE_CONNECTIONS}`,
        what: `${LOAD_SECONDS} s`,
        warm: (v) => load(single(v, WARMUP_SECONDS)),
        run: async (v) => {
          const r = await load(single(v, LOAD_SECONDS));
          return {
            events: r.rps * r.seconds,
            seconds: r.seconds,
            non2xx: r.non2xx,
            errors: r.errors,
            p99: r.p99,
          };
        },
      },
    ];
    for (const mode of modes) {
      const totals = { off: emptyTotals(), on: emptyTotals() };
      for (let round = 0; round < INGEST_ROUNDS; round++) {
        for (const v of orderOf(round)) {
          await mode.warm(v);
          const cpu0 = cpuSecondsOf(server.pid);
          const r = await mode.run(v);
          totals[v].cpu += cpuSecondsOf(server.pid) - cpu0;
          add(totals[v], r);
        }
      }
      const on = totals.on.events / totals.on.seconds;
      const off = totals.off.events / totals.off.seconds;
      const clean = totals.on.non2xx + totals.on.errors + totals.off.non2xx + totals.off.errors === 0;
      report({
        name: `consent: HTTP ingest ${mode.name}, consent + audit on vs off (${engine})`,
        value: on,
        unit: 'events/s',
        ceiling: { value: off, unit: 'events/s off' },
        target: `≥ ${TARGET} of off`,
        pass: on >= TARGET * off && clean,
      });
      const cpuPerEvent = (t: Totals) => (t.cpu * 1e6) / t.events;
      report({
        name: `consent: HTTP ingest ${mode.name}, server CPU per event on vs off (${engine})`,
        value: cpuPerEvent(totals.on),
        unit: 'µs/event',
        ceiling: { value: cpuPerEvent(totals.off), unit: 'µs/event off' },
        target: 'figure (less noisy than a rate on a shared machine)',
      });
      const pairs = totals.on.rates.map((r, k) => r / totals.off.rates[k]!);
      note(
        `${mode.name} (${engine}): on/off per round ${pairs.map((x) => x.toFixed(2)).join(' · ')}; ` +
          `p99 median of rounds ${median(totals.on.p99)} ms on, ${median(totals.off.p99)} ms off; ` +
          `${INGEST_ROUNDS} rounds of ${mode.what} each way` +
          (clean
            ? ''
            : `; non-2xx/errors on ${totals.on.non2xx}/${totals.on.errors}, off ${totals.off.non2xx}/${totals.off.errors}`),
      );
    }
  } finally {
    await server.stop();
  }
}

// ---------------------------------------------------------------------------------------------
// 2. End-to-end processing

const uuidOf = (text: string): string => {
  const h = createHash('md5').update(text).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
};

/**
 * Ten steps per customer, one step per round of the population (consecutive events belong to
 * different people, so every batch touches hundreds of profiles), as in bench/processing.bench.ts:
 *   0 page (device A) · 1 track (A) · 2 identify e-mail + A (sign-up) · 3 page (device B for 1 in 5,
 *   a second anonymous profile; else A + e-mail) · 4 identify e-mail + that device (B merges) ·
 *   5 order · 6 track · 7 identify · 8 page · 9 track.
 * `tag` makes the customers of each round new ones, so every round does the same kinds of work.
 */
function journey(i: number, customers: number, tag: string, consent: boolean): NewEvent {
  const c = i % customers;
  const k = Math.floor(i / customers) % 10;
  const person = `${tag}-${c}`;
  const type: NewEvent['event_type'] = [2, 4, 7].includes(k)
    ? 'identify'
    : k === 5
      ? 'order'
      : [0, 3, 8].includes(k)
        ? 'page'
        : 'track';
  const device = [3, 4].includes(k) && c % 5 === 0 ? 'b' : 'a';
  const price = (c % 90) + 10;
  const payload =
    k === 2
      ? { first_name: `User${c}`, plan: 'free', tags: ['new'] }
      : k === 4
        ? { plan: 'pro', tags: 'returning' }
        : k === 7
          ? { visits: k, last_page: `/p/${c % 50}` }
          : k === 5
            ? {
                order_id: `o-${person}`,
                total: price,
                currency: 'USD',
                items: [{ product_id: `p${c % 200}`, name: `Product ${c % 200}`, price, quantity: 1 }],
              }
            : { path: `/p/${(c + k) % 50}` };
  return {
    event_type: type,
    event_name: {
      identify: 'Identify',
      order: 'Order Completed',
      page: 'Page Viewed',
      track: 'Product Viewed',
    }[type],
    anonymous_id: uuidOf(`${device}${person}`),
    ...(k < 2 || (k === 3 && c % 5 === 0) ? {} : { identity: `${person}@example.com` }),
    payload,
    timestamp: new Date(Date.UTC(2024, 0, 1) + (k * 86400 + (c % 86400)) * 1000).toISOString(),
    ...(consent ? { consent: { categories: { ...CONSENT.categories } } } : {}),
  };
}

interface BatchLine {
  time: number;
  done: number;
  /** The batch's claim and steps, ms (its commit is not in the line). */
  ms: number;
  /** Claim and each step, ms. */
  steps: Record<string, number>;
}

async function measureProcessing(engine: EngineName): Promise<void> {
  let batches: BatchLine[] = [];
  const onStdoutLine = (line: string) => {
    if (!line.includes('"event batch"')) return;
    try {
      const l = JSON.parse(line) as {
        time: number;
        claimed: number;
        deferred: number;
        claim_ms: number;
        step_ms?: Record<string, number>;
      };
      const steps = Object.values(l.step_ms ?? {}).reduce((a, b) => a + b, 0);
      batches.push({
        time: l.time,
        done: l.claimed - l.deferred,
        ms: l.claim_ms + steps,
        steps: { claim: l.claim_ms, ...l.step_ms },
      });
    } catch {
      // not a log line
    }
  };
  const svc: Service = await startService({ engine, env: { ROLE: 'all', LOG_LEVEL: 'debug' }, onStdoutLine });
  try {
    const workspaceId = svc.workspaceId!;
    const customers = Math.max(1, Math.round(EVENTS / 10));
    const totals = {
      off: {
        events: 0,
        seconds: 0,
        cpu: 0,
        steps: new Map<string, number>(),
        batches: 0,
        rates: [] as number[],
      },
      on: {
        events: 0,
        seconds: 0,
        cpu: 0,
        steps: new Map<string, number>(),
        batches: 0,
        rates: [] as number[],
      },
    };
    for (let round = 0; round < ROUNDS; round++) {
      for (const v of orderOf(round)) {
        // Halted while the log is written (PGlite opens in one process; on PostgreSQL a running
        // worker would start on it meanwhile): the drain is timed alone.
        await svc.halt();
        await svc.withDb(async (db) => {
          const receivedAt = new Date().toISOString();
          for (let from = 0; from < EVENTS; from += 5000) {
            const events = Array.from({ length: Math.min(5000, EVENTS - from) }, (_, j) =>
              journey(from + j, customers, `${v}${round}`, v === 'on'),
            );
            await appendEvents(db, events, { workspaceId, receivedAt, validate: from === 0 });
          }
        });
        batches = [];
        await svc.restart();
        const cpu0 = cpuSecondsOf(svc.pid);
        const deadline = performance.now() + 10 * 60_000;
        while (batches.reduce((n, b) => n + b.done, 0) < EVENTS) {
          if (performance.now() > deadline) throw new Error(`${v} round ${round}: log not drained in 10 min`);
          await sleep(100);
        }
        const cpu = cpuSecondsOf(svc.pid) - cpu0;
        const first = batches[0]!;
        const last = batches.at(-1)!;
        const t = totals[v];
        const events = batches.reduce((n, b) => n + b.done, 0);
        const seconds = (last.time - (first.time - first.ms)) / 1000;
        t.events += events;
        t.seconds += seconds;
        t.cpu += cpu;
        t.rates.push(events / seconds);
        t.batches += batches.length;
        for (const b of batches)
          for (const [k, ms] of Object.entries(b.steps)) t.steps.set(k, (t.steps.get(k) ?? 0) + ms);
      }
    }
    const on = totals.on.events / totals.on.seconds;
    const off = totals.off.events / totals.off.seconds;
    report({
      name: `consent: processing end-to-end, every event with consent vs none (${engine})`,
      value: on,
      unit: 'events/s',
      ceiling: { value: off, unit: 'events/s without' },
      target: `≥ ${TARGET} of without`,
      pass: on >= TARGET * off,
    });
    if (engine === 'pglite') await svc.halt();
    const facts = await svc.withDb(
      async (db) =>
        (
          await db.query<Record<string, number>>(
            `SELECT (SELECT count(*)::int FROM profile_consent) AS consent_rows,
                    (SELECT count(*)::int FROM profile_lineage WHERE path LIKE '/consent/%') AS consent_lineage,
                    (SELECT count(*)::int FROM profiles WHERE merged_into IS NULL) AS live,
                    (SELECT count(*)::int FROM dead_letters) AS dead`,
          )
        ).rows[0]!,
    );
    const perEvent = (t: typeof totals.on) => (t.cpu * 1e6) / t.events;
    report({
      name: `consent: processing CPU per event in the service, with consent vs none (${engine})`,
      value: perEvent(totals.on),
      unit: 'µs/event',
      ceiling: { value: perEvent(totals.off), unit: 'µs/event without' },
      target: 'figure (less noisy than a rate on a shared machine)',
    });
    // Within the same batches, so beside the rates (which the machine's load moves by tens of
    // percent between rounds): the share of a batch's time the consent step takes.
    const all = [...totals.on.steps.values()].reduce((a, b) => a + b, 0);
    const consent = totals.on.steps.get('apply consent') ?? 0;
    report({
      name: `consent: processing, batch time outside the consent step, with consent (${engine})`,
      value: all - consent,
      unit: 'ms',
      ceiling: { value: all, unit: 'ms in all (claim and every step)' },
      target: "figure (the same batches: the step's own share, free of the machine's noise)",
    });
    for (const v of ['on', 'off'] as const) {
      const t = totals[v];
      note(
        `processing ${v} (${engine}): events/s per round ${t.rates.map((r) => r.toFixed(0)).join(' · ')}; ` +
          `${(t.events / t.batches).toFixed(0)} events per batch; ms per 1000 events: ` +
          [...t.steps].map(([k, ms]) => `${k} ${((ms * 1000) / t.events).toFixed(0)}`).join(', '),
      );
    }
    note(
      `processing (${engine}): ${ROUNDS} rounds of ${EVENTS} events each way; live profiles ${facts.live}, ` +
        `consent rows ${facts.consent_rows}, consent lineage rows ${facts.consent_lineage}, dead letters ${facts.dead}`,
    );
  } finally {
    await svc.stop();
  }
}

export default async function run(): Promise<void> {
  for (const engine of await engines()) {
    await measureIngest(engine);
    await measureProcessing(engine);
  }
}

if (process.env.CONSENT_BENCH_SERVE) {
  serve(process.env.CONSENT_BENCH_SERVE as EngineName).catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  });
}
