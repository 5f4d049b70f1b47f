/**
 * Retention sweep (issue 29), on each engine: BENCH_RETENTION_EVENTS events (default 1,000,000 on
 * PostgreSQL, 100,000 on PGlite, whose one connection and 2-core host make a million a half-hour
 * load) are sent to workspace A through the batch API (`POST /tenant/ingest/batch`, 1000 a request,
 * 4 in flight), over a hundredth as many customers, each with five payload values (so about six
 * `event_properties` rows per event), and applied by the service's worker. A's `events_days` is set
 * to 1 (`PATCH /tenant/settings`). Then the service's own retention job sweeps A with its clock two
 * days ahead: a job `{workspace_id, at}` queued in its database, `at` two days from now (what a
 * benchmark cannot do through the API is wait two days; the rows themselves are untouched).
 *
 * Meanwhile workspace B (created through `POST /system/workspaces`) sends single events and reads
 * profiles, 20 pairs a second (test/neighbour-workload.ts), as it did in the idle window just before
 * the sweep: B's ingest p95 during the sweep beside its idle p95 (target ≤ 2×). The sweep's time
 * (from the start of its first job to the end of its last, read from the service's
 * `retention: workspace swept` log lines) is printed beside the time the service took to take in
 * and apply the same events: retention keeps up with a workspace only if removing a day of events
 * costs less than writing it did (target ratio ≤ 1).
 *
 * PostgreSQL also: the same rows copied into tables partitioned by seq (events, event_profiles,
 * event_properties, each with its indexes), and the time to drop the partitions that hold them: the
 * alternative docs/decisions.md ("Retention: no partitions") weighs.
 *
 *   npm run bench -- retention
 *   BENCH_ENGINES=pglite BENCH_RETENTION_EVENTS=20000 npm run bench -- retention   (a quick run)
 */
import { randomBytes } from 'node:crypto';
import { enqueue } from '../src/platform/jobs';
import { RETENTION_QUEUE } from '../src/workflows';
import { quantile, quietTraffic, type Sample } from '../test/neighbour-workload';
import { type EngineName, engines, note, report, type Service, sleep, startService } from './lib';

const DAY_MS = 86_400_000;
const BATCH = 1000;
const IN_FLIGHT = 4;
/** B's idle window, measured after the restart that precedes the sweep. */
const IDLE_MS = 15_000;
/** B's requests before the idle window, not counted: a restarted service warms up first. */
const WARM_MS = 5_000;
const NAMES = ['Page Viewed', 'Product Viewed', 'Added to Cart', 'Checkout Started', 'Signed In'];

function eventsFor(engine: EngineName): number {
  return Number(process.env.BENCH_RETENTION_EVENTS ?? (engine === 'postgres' ? 1_000_000 : 100_000));
}

function event(i: number, customers: number) {
  const c = i % customers;
  return {
    event_type: 'track',
    event_name: NAMES[i % NAMES.length],
    identity: `c${c}@retention.bench`,
    payload: {
      price: i % 200,
      sku: `p${i % 1000}`,
      category: `cat${c % 8}`,
      product: { brand: `b${i % 10}`, size: 1 + (i % 3) },
    },
  };
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

/** Sends `total` events to the workspace of `key` in batches, IN_FLIGHT at once. */
async function sendEvents(svc: Service, key: string, total: number): Promise<void> {
  const customers = Math.max(1, Math.floor(total / 100));
  let next = 0;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < total) {
        const from = next;
        next += BATCH;
        const body = Array.from({ length: Math.min(BATCH, total - from) }, (_, j) =>
          event(from + j, customers),
        );
        await call(svc, 'POST', '/tenant/ingest/batch', { 'x-api-key': key }, body);
      }
    }),
  );
}

async function backlogEmpty(svc: Service, key: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const stats = await call(svc, 'GET', '/tenant/stats', { 'x-api-key': key });
    if ((stats.data as { ingestion_backlog: number }).ingestion_backlog === 0) return;
    if (Date.now() > deadline) throw new Error('the worker did not apply the events in time');
    await sleep(500);
  }
}

/**
 * PostgreSQL: copies A's events with their event_profiles and event_properties rows into tables
 * partitioned by seq (one partition holding them, one for later seqs), with the live tables'
 * indexes, and times dropping the three partitions. Answers the drop's milliseconds.
 */
async function partitionDropMs(svc: Service, workspaceId: string): Promise<{ ms: number; copyS: number }> {
  return svc.withDb(async (db) => {
    const LONG = { timeoutMs: 3_600_000 };
    const { rows } = await db.query<{ s: string }>(
      'SELECT max(seq) AS s FROM events WHERE workspace_id = $1',
      [workspaceId],
    );
    const top = Number(rows[0]!.s) + 1;
    const t0 = performance.now();
    for (const [table, indexes] of [
      ['events', ['(workspace_id, received_at)']],
      [
        'event_profiles',
        ['(workspace_id, event_name, occurred_at)', '(workspace_id, profile_id, occurred_at)'],
      ],
      [
        'event_properties',
        [
          '(workspace_id, event_name, path, occurred_at)',
          '(workspace_id, profile_id, event_name, path, occurred_at)',
        ],
      ],
    ] as const) {
      await db.exec(`CREATE TABLE rb_${table} (LIKE ${table} INCLUDING DEFAULTS) PARTITION BY RANGE (seq);
        CREATE TABLE rb_${table}_old PARTITION OF rb_${table} FOR VALUES FROM (MINVALUE) TO (${top});
        CREATE TABLE rb_${table}_new PARTITION OF rb_${table} FOR VALUES FROM (${top}) TO (MAXVALUE);`);
      await db.query(
        `INSERT INTO rb_${table} SELECT * FROM ${table} WHERE workspace_id = $1`,
        [workspaceId],
        LONG,
      );
      for (const cols of indexes) await db.query(`CREATE INDEX ON rb_${table} ${cols}`, [], LONG);
      if (table !== 'event_properties') await db.exec(`ALTER TABLE rb_${table} ADD PRIMARY KEY (seq)`);
    }
    await db.exec('CHECKPOINT');
    const copyS = (performance.now() - t0) / 1000;
    const t1 = performance.now();
    await db.exec('DROP TABLE rb_events_old, rb_event_profiles_old, rb_event_properties_old');
    const ms = performance.now() - t1;
    await db.exec('DROP TABLE rb_events, rb_event_profiles, rb_event_properties');
    return { ms, copyS };
  });
}

interface Timed {
  /** Date.now() when the request was sent (the service's log times are Date.now() too). */
  at: number;
  sample: Sample;
}

/** B's paced traffic (test/neighbour-workload.ts) with the time each request was sent. */
async function timedTraffic(b: { url: string; key: string }, until: number): Promise<Timed[]> {
  const out: Timed[] = [];
  while (performance.now() < until) {
    const at = Date.now();
    const got = await quietTraffic(b, performance.now() + 1);
    for (const sample of got) out.push({ at, sample });
  }
  return out;
}

interface SweptLine {
  time: number;
  ms: number;
  done: boolean;
  removed: Record<string, number>;
  batches: number;
}

export default async function run(): Promise<void> {
  for (const engine of await engines()) {
    const total = eventsFor(engine);
    const operatorToken = randomBytes(24).toString('base64url');
    const swept: SweptLine[] = [];
    const svc = await startService({
      engine,
      env: { LOG_LEVEL: 'info', CDP_OPERATOR_TOKEN: operatorToken },
      onStdoutLine: (line) => {
        if (!line.includes('retention: workspace swept')) return;
        const l = JSON.parse(line) as SweptLine & { workspace_id: string };
        if (l.workspace_id === svc.workspaceId) swept.push(l);
      },
    });
    try {
      const a = { 'x-api-key': svc.adminKey };
      const created = await call(
        svc,
        'POST',
        '/system/workspaces',
        { authorization: `Bearer ${operatorToken}` },
        {
          name: 'retention neighbour B',
        },
      );
      const bKey = (created.data.api_key as { api_key: string }).api_key;

      const t0 = performance.now();
      await sendEvents(svc, svc.adminKey, total);
      const sentS = (performance.now() - t0) / 1000;
      await backlogEmpty(svc, svc.adminKey, 3_600_000);
      const writtenS = (performance.now() - t0) / 1000;
      note(
        `${engine}: ${total} events sent through the API in ${sentS.toFixed(0)} s, applied after ${writtenS.toFixed(0)} s`,
      );
      await call(svc, 'PATCH', '/tenant/settings', a, { retention: { events_days: 1 } });

      let partition: { ms: number; copyS: number } | null = null;
      if (engine === 'postgres') partition = await partitionDropMs(svc, svc.workspaceId!);

      // The sweep job, due once B's idle window after the restart is over.
      await svc.halt();
      const properties = await svc.withDb(async (db) => {
        const { rows } = await db.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM event_properties WHERE workspace_id = $1',
          [svc.workspaceId],
        );
        await enqueue(db, {
          queue: RETENTION_QUEUE,
          key: `ws:${svc.workspaceId}`,
          workspaceId: svc.workspaceId,
          payload: { workspace_id: svc.workspaceId, at: new Date(Date.now() + 2 * DAY_MS).toISOString() },
          delayMs: IDLE_MS + WARM_MS + 30_000,
        });
        return rows[0]!.n;
      });
      const dueAt = performance.now() + IDLE_MS + WARM_MS + 30_000;
      await svc.restart();
      if (dueAt - performance.now() < WARM_MS + IDLE_MS + 1_000)
        throw new Error('the restart took too long for the idle window');
      await sleep(dueAt - performance.now() - WARM_MS - IDLE_MS - 1_000);
      const b = { url: svc.url, key: bKey };
      // A restarted service is cold (JIT, caches): its first seconds are neither idle nor busy.
      await quietTraffic(b, performance.now() + WARM_MS);
      const idle = await quietTraffic(b, performance.now() + IDLE_MS);
      // B goes on from just before the job is due until its last job has logged; the samples that
      // overlap the sweep (its jobs' start and end, from their log lines) are the busy ones.
      const traffic: Timed[] = [];
      const sweepDeadline = performance.now() + 3_600_000;
      while (!swept.some((l) => l.done)) {
        if (performance.now() > sweepDeadline) throw new Error('the sweep did not end within an hour');
        traffic.push(...(await timedTraffic(b, performance.now() + 1_000)));
      }
      const removed = swept.reduce((n, l) => n + (l.removed.events ?? 0), 0);
      const batches = swept.reduce((n, l) => n + l.batches, 0);
      const first = swept[0]!;
      const last = swept.at(-1)!;
      const sweepStart = first.time - first.ms;
      const sweepS = (last.time - sweepStart) / 1000;
      const busy = traffic
        .filter((x) => x.at + x.sample.ms >= sweepStart && x.at <= last.time)
        .map((x) => x.sample);
      const ingestOf = (xs: Sample[]) => xs.filter((s) => s.kind === 'ingest');
      const p95 = (xs: Sample[]) =>
        quantile(
          ingestOf(xs).map((s) => s.ms),
          0.95,
        );
      const fivexx = busy.filter((s) => s.status >= 500).length;
      note(
        `${engine}: removed ${removed} events and ${properties} property rows with them in ${batches} batches, ` +
          `${swept.length} jobs; B sent ${ingestOf(busy).length} events during the sweep, ${fivexx} 5xx`,
      );
      report({
        name: `retention sweep of ${total} expired events (${engine})`,
        value: sweepS,
        unit: 's',
        ceiling: { value: writtenS, unit: 's to ingest and apply them' },
        target: '≤ 1× the time to write them',
        pass: removed === total && sweepS <= writtenS,
      });
      report({
        name: `retention sweep rate (${engine})`,
        value: removed / sweepS,
        unit: 'events/s',
        target: 'report',
      });
      report({
        name: `workspace B's ingest p95 during the sweep (${engine})`,
        value: p95(busy),
        unit: 'ms',
        ceiling: { value: p95(idle), unit: 'ms idle' },
        target: '≤ 2× idle, no 5xx',
        pass: fivexx === 0 && p95(busy) <= 2 * p95(idle),
      });
      if (partition) {
        note(
          `postgres: the copy into partitioned tables took ${partition.copyS.toFixed(0)} s (not part of either figure)`,
        );
        report({
          name: `dropping partitions holding the same ${total} events and their rows (postgres)`,
          value: partition.ms,
          unit: 'ms',
          ceiling: { value: sweepS * 1000, unit: 'ms for the batched sweep' },
          target: 'report (docs/decisions.md)',
        });
      }
      await svc.halt();
      const left = await svc.withDb(async (db) => {
        const { rows } = await db.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM events WHERE workspace_id = $1',
          [svc.workspaceId],
        );
        return rows[0]!.n;
      });
      if (left !== 0) note(`${engine}: ${left} of A's events are left: the sweep missed some`);
    } finally {
      await svc.stop();
    }
  }
}
