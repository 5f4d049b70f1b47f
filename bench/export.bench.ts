/**
 * Workspace export (issue 29): `GET /tenant/exports/events` of a workspace of BENCH_EXPORT_EVENTS_PG
 * events on PostgreSQL (default 1,000,000) and BENCH_EXPORT_EVENTS_PGLITE on PGlite (default
 * 200,000), loaded through the API as users load them (`POST /tenant/ingest/batch`, the workspace's
 * rate limits raised through its settings) and processed. Three figures per engine, each beside its
 * ceiling from the same run:
 *
 * The first export is not measured (caches, code); the second is measured alone (rows/s, memory),
 * the third beside the neighbour's ingest (its p95).
 *
 * - rows/s of the export as a client reads it (NDJSON, over HTTP), beside the database's own
 *   fastest output of the same rows: `COPY (SELECT … FROM events WHERE workspace_id = …) TO STDOUT`
 *   (psql, PostgreSQL) or `TO '/dev/blob'` (PGlite, the service halted): target ≥ 0.5;
 * - the service's peak RSS during the export above its RSS just before it: target ≤ 50 MB;
 * - a neighbour workspace's single-event ingest p95 during the export, beside its p95 with the
 *   exporting workspace idle: target ≤ 2×.
 *
 *   npm run bench -- export
 *   BENCH_EXPORT_EVENTS_PG=100000 BENCH_EXPORT_EVENTS_PGLITE=20000 npm run bench -- export   (a quick run)
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { quantile } from '../test/neighbour-workload';
import {
  BENCH_RATE_LIMITS,
  type EngineName,
  engines,
  memoryOf,
  note,
  PG_URL,
  report,
  type Service,
  sleep,
  startService,
} from './lib';

const SIZES: Record<EngineName, number> = {
  postgres: Number(process.env.BENCH_EXPORT_EVENTS_PG ?? 1_000_000),
  pglite: Number(process.env.BENCH_EXPORT_EVENTS_PGLITE ?? 200_000),
};
/** How long the neighbour's idle p95 is sampled. */
const IDLE_SECONDS = Number(process.env.BENCH_EXPORT_IDLE_SECONDS ?? 10);
/** The neighbour's single events per second, idle and during the export alike. */
const NEIGHBOUR_RATE = 25;
/** Batches in flight while loading. */
const LOADERS = 3;

/** The columns COPY writes: the log's own columns of each exported record. */
const COPY_COLUMNS =
  'id, message_id, event_type, event_name, anonymous_id, identity, payload, occurred_at, received_at';

/** One batch of a shop's events: page views and product views, a sign-up per person, some orders. */
function batch(from: number, n: number, people: number): unknown[] {
  return Array.from({ length: n }, (_, k) => {
    const i = from + k;
    const person = i % people;
    const identity = `shopper${person}@example.com`;
    if (i < people)
      return {
        identity,
        event_type: 'identify',
        event_name: 'Signed Up',
        payload: { first_name: `Shopper ${person}`, plan: person % 3 ? 'free' : 'pro', city: 'Lisbon' },
      };
    if (i % 25 === 0)
      return {
        identity,
        event_type: 'order',
        event_name: 'Order Completed',
        payload: {
          order_id: `o-${i}`,
          total: 20 + (i % 200),
          items: [{ product_id: `p-${i % 500}`, price: 20 }],
        },
      };
    return {
      identity,
      event_type: 'track',
      event_name: i % 3 ? 'Product Viewed' : 'Page Viewed',
      payload: {
        product_id: `p-${i % 500}`,
        price: 9.99 + (i % 90),
        category: ['shoes', 'bags', 'hats'][i % 3],
        url: `https://shop.example.com/products/p-${i % 500}?ref=home`,
      },
    };
  });
}

async function post(
  url: string,
  key: string,
  path: string,
  body: unknown,
  method = 'POST',
): Promise<Response> {
  return fetch(`${url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', 'x-api-key': key },
    body: JSON.stringify(body),
  });
}

async function load(svc: Service, events: number): Promise<number> {
  const t0 = performance.now();
  const people = Math.max(1, Math.floor(events / 20));
  let next = 0;
  const loader = async () => {
    for (;;) {
      const from = next;
      if (from >= events) return;
      next += 1000;
      const res = await post(
        svc.url,
        svc.adminKey,
        '/tenant/ingest/batch',
        batch(from, Math.min(1000, events - from), people),
      );
      if (res.status !== 202) throw new Error(`load: ${res.status} ${await res.text()}`);
    }
  };
  await Promise.all(Array.from({ length: LOADERS }, loader));
  return (performance.now() - t0) / 1000;
}

async function waitProcessed(svc: Service): Promise<void> {
  const deadline = Date.now() + 3_600_000;
  while (Date.now() < deadline) {
    const s = await fetch(`${svc.url}/tenant/stats`, { headers: { 'x-api-key': svc.adminKey } });
    if (s.ok && ((await s.json()) as { data: { ingestion_backlog: number } }).data.ingestion_backlog === 0)
      return;
    await sleep(1000);
  }
  throw new Error('events were not processed within an hour');
}

/** The neighbour's single-event ingest latencies (ms), paced, until `stop()` answers true. */
async function neighbour(url: string, key: string, stop: () => boolean): Promise<number[]> {
  const ms: number[] = [];
  const gap = 1000 / NEIGHBOUR_RATE;
  for (let n = 0; !stop(); n++) {
    const t0 = performance.now();
    const res = await post(url, key, '/api/ingest', {
      identity: `n${n % 50}@example.com`,
      event_type: 'track',
      event_name: 'Viewed',
      payload: { n },
    });
    await res.arrayBuffer();
    if (res.status !== 202) throw new Error(`neighbour ingest: ${res.status}`);
    ms.push(performance.now() - t0);
    const left = gap - (performance.now() - t0);
    if (left > 0) await sleep(left);
  }
  return ms;
}

/** Reads the whole export as a client does, counting its lines; rows/s and whether it was complete. */
function readExport(
  url: string,
  key: string,
): Promise<{ rows: number; bytes: number; seconds: number; complete: boolean }> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    request(`${url}/tenant/exports/events`, { headers: { 'x-api-key': key } }, (res) => {
      if (res.statusCode !== 200) reject(new Error(`export answered ${res.statusCode}`));
      let rows = 0;
      let bytes = 0;
      res.on('data', (d: Buffer) => {
        bytes += d.length;
        for (let i = d.indexOf(10); i !== -1; i = d.indexOf(10, i + 1)) rows++;
      });
      res.on('error', () => {});
      res.on('close', () =>
        resolve({ rows, bytes, seconds: (performance.now() - t0) / 1000, complete: res.complete }),
      );
    })
      .on('error', reject)
      .end();
  });
}

/** COPY of the same rows, as the database's fastest output: the best of three runs, seconds. */
async function copySeconds(svc: Service, workspaceId: string): Promise<number> {
  const select = `SELECT ${COPY_COLUMNS} FROM events WHERE workspace_id = '${workspaceId}'`;
  const runs: number[] = [];
  if (svc.engine === 'pglite') {
    await svc.halt();
    await svc.withDb(async (db) => {
      for (let i = 0; i < 3; i++) {
        const t0 = performance.now();
        await db.query(`COPY (${select}) TO '/dev/blob'`);
        runs.push((performance.now() - t0) / 1000);
      }
    });
    return Math.min(...runs);
  }
  const schema = await svc.withDb(
    async (db) => (await db.query<{ s: string }>('SELECT current_schema() AS s')).rows[0]!.s,
  );
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    await new Promise<void>((resolve, reject) => {
      const psql = spawn(
        'psql',
        [PG_URL, '-X', '-q', '-c', `SET search_path TO ${schema}`, '-c', `COPY (${select}) TO STDOUT`],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let bytes = 0;
      psql.stdout.on('data', (d: Buffer) => {
        bytes += d.length;
      });
      let err = '';
      psql.stderr.on('data', (d: Buffer) => {
        err += d;
      });
      psql.on('error', reject);
      psql.on('close', (code) =>
        code === 0 && bytes > 0 ? resolve() : reject(new Error(`psql: ${code} ${err}`)),
      );
    });
    runs.push((performance.now() - t0) / 1000);
  }
  return Math.min(...runs);
}

export default async function run(): Promise<void> {
  for (const engine of await engines()) {
    const events = SIZES[engine];
    const token = `op_${randomBytes(16).toString('hex')}`;
    // The service's `export ended` log lines (info) say how each export was paged.
    const ended: Array<Record<string, unknown>> = [];
    const svc = await startService({
      engine,
      env: { CDP_OPERATOR_TOKEN: token, LOG_LEVEL: 'info' },
      onStdoutLine: (line) => {
        if (line.includes('"export ended"')) ended.push(JSON.parse(line));
      },
    });
    try {
      const made = await fetch(`${svc.url}/system/workspaces`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'neighbour' }),
      });
      const neighbourKey = ((await made.json()) as { data: { api_key: { api_key: string } } }).data.api_key
        .api_key;
      await post(svc.url, neighbourKey, '/tenant/settings', BENCH_RATE_LIMITS, 'PATCH');

      const loadS = await load(svc, events);
      await waitProcessed(svc);
      note(`${engine}: ${events} events loaded through the API in ${loadS.toFixed(0)} s, processed`);

      // The export alone (its speed and memory), after one unmeasured export (warm caches and code).
      const check = (r: { rows: number; complete: boolean }) => {
        if (!r.complete || r.rows !== events)
          throw new Error(`export incomplete: ${r.rows} of ${events} rows`);
      };
      check(await readExport(svc.url, svc.adminKey));
      await sleep(2000);
      const idleRss = memoryOf(svc.pid).rssMb;
      let peakRss = idleRss;
      const sampler = setInterval(() => {
        peakRss = Math.max(peakRss, memoryOf(svc.pid).rssMb);
      }, 20);
      const got = await readExport(svc.url, svc.adminKey);
      clearInterval(sampler);
      check(got);

      // The neighbour's ingest, idle, then during another export.
      let idleDone = false;
      const idleRun = neighbour(svc.url, neighbourKey, () => idleDone);
      await sleep(IDLE_SECONDS * 1000);
      idleDone = true;
      const idle = await idleRun;
      let exportDone = false;
      const busyRun = neighbour(svc.url, neighbourKey, () => exportDone);
      const during = await readExport(svc.url, svc.adminKey);
      exportDone = true;
      const busy = await busyRun;
      check(during);

      const copyS = await copySeconds(svc, svc.workspaceId!);
      note(
        `${engine}: export ${got.rows} rows, ${(got.bytes / 1024 / 1024).toFixed(0)} MB in ${got.seconds.toFixed(2)} s; ` +
          `COPY ${copyS.toFixed(2)} s; RSS before ${idleRss.toFixed(0)} MB; beside the neighbour ${during.seconds.toFixed(2)} s, ` +
          `its samples idle ${idle.length}, during ${busy.length}`,
      );
      for (const [i, e] of ended.entries())
        note(
          `${engine}: export ${i + 1} (${['warm-up', 'alone', 'beside the neighbour'][i] ?? '?'}): ${e.pages} pages ` +
            `(largest ${e.largestPage} rows), ${e.pageMs} ms reading pages of ${e.ms} ms`,
        );
      const rate = got.rows / got.seconds;
      const ceiling = events / copyS;
      report({
        name: `export of ${events} events, rows/s (${engine})`,
        value: rate,
        unit: 'rows/s',
        ceiling: { value: ceiling, unit: 'rows/s COPY' },
        target: '≥ 0.5 of COPY',
        pass: rate >= 0.5 * ceiling,
      });
      report({
        name: `service peak RSS above idle during the export (${engine})`,
        value: peakRss - idleRss,
        unit: 'MB',
        target: '≤ 50 MB',
        pass: peakRss - idleRss <= 50,
      });
      const quiet = quantile(idle, 0.95);
      const loud = quantile(busy, 0.95);
      report({
        name: `neighbour's single-event ingest p95 during the export (${engine})`,
        value: loud,
        unit: 'ms',
        ceiling: { value: quiet, unit: 'ms with the workspace idle' },
        target: '≤ 2× idle',
        pass: loud <= 2 * quiet,
      });
    } finally {
      await svc.stop();
    }
  }
}
