/**
 * End-to-end processing, on each engine (BENCH_ENGINES): BENCH_EVENTS events (default 1,000,000)
 * over BENCH_CUSTOMERS customers (default a tenth of that) are written into the event log (the
 * setup, not measured), then the real service (`node bin/cdp.mjs start`, worker in-process) applies
 * them: identity resolution, anonymous → identified merges, traits with lineage, orders through
 * commerce. The service logs every batch (LOG_LEVEL=debug: events claimed, deferred, claim time);
 * from those lines the bench measures events/s over the whole log, over the first and the last
 * 100,000 events, and the mean claim time of each window: a claim must not slow down as the log of
 * processed events grows. Also the process's peak RSS, and the CPU spent per event (the service's
 * and the rest of the machine's) against the budget the target rate leaves on these cores. Ceiling, measured in the same run on the same
 * database: batched jsonb upserts of profile-shaped rows (1000 per statement), the cheapest write
 * every processed event needs at least.
 *
 *   BENCH_EVENTS=100000 npm run bench -- processing      (a quick run)
 *   BENCH_WORKERS=1 BENCH_SERVICE_ENV=WORKER_LOOPS=1 …     (PostgreSQL: one more ROLE=worker process)
 */
import { createHash } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { appendEvents, type NewEvent } from '../src/modules/ingest';
import type { Db } from '../src/platform/db';
import { backendCpuSampler, readTableWrites, settledTableWrites, writesPerEvent } from './db-work';
import {
  cpuSecondsOf,
  type EngineName,
  engines,
  machineBusySeconds,
  memoryOf,
  note,
  PG_URL,
  report,
  type Service,
  sleep,
  startService,
} from './lib';

const TARGET_EVENTS_PER_S = { postgres: 20_000, pglite: 5_000 } as const;
/** The last window's rate may be at most this much below the first's. */
const MAX_SLOWDOWN = 0.1;
const WINDOW = 100_000;
const TARGET_RSS_MB = 400;

/**
 * Each customer's journey, one step per round of the whole population (so consecutive events belong
 * to different people, as in a real stream, and every batch touches ~1000 profiles):
 *   0 page (device A) · 1 track (A) · 2 identify e-mail + A (sign-up: the anonymous profile gains the
 *   e-mail) · 3 page (device B for 1 in 5 customers: a second anonymous profile; else A + e-mail) ·
 *   4 identify e-mail + that device (B: merges into the identified profile) · 5 order · 6 track ·
 *   7 identify · 8 page · 9 track, then again from 5 for longer journeys.
 */
function journey(i: number, customers: number): NewEvent {
  const c = i % customers;
  const s = Math.floor(i / customers);
  const k = s < 10 ? s : 5 + ((s - 10) % 5);
  const type: NewEvent['event_type'] = [2, 4, 7].includes(k)
    ? 'identify'
    : k === 5
      ? 'order'
      : [0, 3, 8].includes(k)
        ? 'page'
        : 'track';
  const name = {
    identify: 'Identify',
    order: 'Order Completed',
    page: 'Page Viewed',
    track: 'Product Viewed',
  }[type];
  const device = [3, 4].includes(k) && c % 5 === 0 ? 'b' : 'a';
  const price = (c % 90) + 10;
  const payload =
    k === 2
      ? { first_name: `User${c}`, plan: 'free', tags: ['new'] }
      : k === 4
        ? { plan: 'pro', tags: 'returning', email: `User${c}@Example.com` }
        : k === 7
          ? { visits: s, last_page: `/p/${c % 50}`, prefs: { news: s % 2 === 0 } }
          : k === 5
            ? {
                order_id: `o${c}-${s}`,
                total: price,
                currency: 'USD',
                items: [
                  {
                    product_id: `p${c % 200}`,
                    name: `Product ${c % 200}`,
                    price,
                    quantity: 1,
                    category: `cat${c % 10}`,
                  },
                ],
              }
            : { path: `/p/${(c + s) % 50}` };
  return {
    event_type: type,
    event_name: name,
    anonymous_id: uuidOf(`${device}${c}`),
    ...(s < 2 || (s === 3 && c % 5 === 0) ? {} : { identity: `user${c}@example.com` }),
    payload,
    timestamp: new Date(Date.UTC(2024, 0, 1) + (s * 86400 + (c % 86400)) * 1000).toISOString(),
  };
}

const uuidOf = (text: string): string => {
  const h = createHash('md5').update(text).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
};

/**
 * Appends the journey through the ingest module's one append path (normalisation, validation of the
 * first slice), two slices of 5,000 in flight.
 */
async function appendJourney(db: Db, workspaceId: string, total: number, customers: number): Promise<void> {
  const SLICE = 5000;
  const receivedAt = new Date().toISOString();
  let next = 0;
  await Promise.all(
    [0, 1].map(async () => {
      while (next < total) {
        const from = next;
        next += SLICE;
        const events = Array.from({ length: Math.min(SLICE, total - from) }, (_, j) =>
          journey(from + j, customers),
        );
        await appendEvents(db, events, { workspaceId, receivedAt, validate: from === 0 });
      }
    }),
  );
}

/** The ceiling: profile-shaped jsonb rows upserted 1000 per statement into a scratch table. */
async function measureUpsertCeiling(db: Db, rows: number): Promise<number> {
  await db.query('CREATE TABLE bench_profiles (LIKE profiles INCLUDING DEFAULTS INCLUDING INDEXES)');
  const batch = (from: number) =>
    JSON.stringify(
      Array.from({ length: 1000 }, (_, j) => ({
        id: `00000000-0000-4000-8000-${String((from + j) % rows).padStart(12, '0')}`,
        workspace_id: '00000000-0000-4000-8000-000000000000',
        email: `user${from + j}@example.com`,
        attributes: { plan: 'pro', tags: ['new', 'returning'], visits: j, prefs: { news: true } },
        field_times: { '/email': 1, '/attributes/plan': 2, '/attributes/tags': 3, '/attributes/visits': 4 },
      })),
    );
  const sql = `INSERT INTO bench_profiles (id, workspace_id, email, attributes, field_times)
    SELECT id, workspace_id, email, attributes, field_times
      FROM jsonb_to_recordset($1::jsonb) AS r(id uuid, workspace_id uuid, email text, attributes jsonb, field_times jsonb)
    ON CONFLICT (id) DO UPDATE SET email = EXCLUDED.email, attributes = EXCLUDED.attributes,
      field_times = EXCLUDED.field_times, updated_at = now()`;
  // Half inserts, half updates of existing rows, like a stream of new and returning customers.
  const payloads = Array.from({ length: (2 * rows) / 1000 }, (_, b) => batch(b * 1000));
  const t0 = performance.now();
  for (const p of payloads) await db.query(sql, [p]);
  const seconds = (performance.now() - t0) / 1000;
  await db.query('DROP TABLE bench_profiles');
  return (2 * rows) / seconds;
}

interface BatchLine {
  time: number;
  done: number;
  claimMs: number;
}

/** Rate and mean claim time over the batches that took the count of done events from `from` to `to`. */
function windowOf(batches: readonly BatchLine[], from: number, to: number) {
  let total = 0;
  let startIdx = -1;
  let endIdx = -1;
  for (let i = 0; i < batches.length; i++) {
    total += batches[i]!.done;
    if (startIdx < 0 && total > from) startIdx = i;
    if (endIdx < 0 && total >= to) endIdx = i;
  }
  if (startIdx < 0 || endIdx < 0) return null;
  // The window starts where the batch before its first ended (or at the first batch's own time).
  const t0 = startIdx > 0 ? batches[startIdx - 1]!.time : batches[0]!.time - 100;
  const t1 = batches[endIdx]!.time;
  const inWindow = batches.slice(startIdx, endIdx + 1);
  const events = inWindow.reduce((n, b) => n + b.done, 0);
  const claims = inWindow.map((b) => b.claimMs);
  return {
    rate: events / Math.max(0.001, (t1 - t0) / 1000),
    claimMs: claims.reduce((a, b) => a + b, 0) / Math.max(1, claims.length),
  };
}

async function runEngine(engine: EngineName, total: number, customers: number): Promise<void> {
  const batches: BatchLine[] = [];
  const stepMs = new Map<string, number>();
  let done = 0;
  // Claimed, then left for a later batch (an older event of the same person held elsewhere).
  let deferred = 0;
  // What the service said last besides batches (jobs, fits, maintenance): the context of a peak.
  const recent: string[] = [];
  // The statistics check's ANALYZEs while the log drains (src/platform/db/statistics.ts).
  const analyzes: Array<{ table: string; ms: number }> = [];
  const onStdoutLine = (line: string) => {
    if (line.includes('"table statistics refreshed"')) {
      try {
        const l = JSON.parse(line) as { analyzed: Record<string, number> };
        for (const [table, ms] of Object.entries(l.analyzed)) analyzes.push({ table, ms });
      } catch {
        // not a log line
      }
      return;
    }
    if (!line.includes('"event batch"')) {
      const msg = /"msg":"([^"]*)"/.exec(line)?.[1];
      // The backlog's vacuum every 5,000 events would crowd out everything else.
      if (msg && msg !== 'event backlog vacuumed' && recent.push(msg) > 4) recent.shift();
      return;
    }
    try {
      const l = JSON.parse(line) as {
        time: number;
        claimed: number;
        deferred: number;
        claim_ms: number;
        step_ms?: Record<string, number>;
      };
      const n = l.claimed - l.deferred;
      done += n;
      deferred += l.deferred;
      for (const [k, v] of Object.entries(l.step_ms ?? {})) stepMs.set(k, (stepMs.get(k) ?? 0) + v);
      batches.push({ time: l.time, done: n, claimMs: l.claim_ms });
    } catch {
      // not a log line
    }
  };
  let svc: Service | null = null;
  let peakSampler: NodeJS.Timeout | undefined;
  try {
    // BENCH_WORKERS: more worker processes beside the service (PostgreSQL), the operator's lever
    // for throughput (docs/operations.md); CPU per event then counts all of them as the service.
    const workers = engine === 'postgres' ? Number(process.env.BENCH_WORKERS ?? 0) : 0;
    svc = await startService({
      engine,
      env: { ROLE: 'all', LOG_LEVEL: 'debug' },
      workers,
      onStdoutLine,
      nodeArgs: process.env.BENCH_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROF}`] : [],
    });
    const workspaceId = svc.workspaceId!;
    // The high-water mark (VmHWM) can come from a burst shorter than the 250 ms samples below:
    // sampled every 20 ms from here on, the peak is reported with what the service was doing.
    let phase = 'setup';
    const peak = { rssMb: 0, phase, done: 0, recent: [] as string[] };
    peakSampler = setInterval(() => {
      let rss = 0;
      try {
        rss = svc ? memoryOf(svc.pid).rssMb : 0;
      } catch {
        // The service is halted while the bench writes the log: no process to sample.
      }
      if (rss > peak.rssMb) Object.assign(peak, { rssMb: rss, phase, done, recent: [...recent] });
    }, 20);
    // The service is halted while the bench writes the log, on both engines: PGlite's directory
    // can only be opened then, and on PostgreSQL a running worker would drain the log while it is
    // written (each slice commits), so the measured window would start in the middle of the
    // backlog, its first part processed while the appends took CPU, and CPU per event would leave
    // out the work done before the window. The drain is measured alone, as the baseline was
    // (one INSERT of the whole log, visible to the worker only at its commit).
    await svc.halt();
    const ceiling = await svc.withDb((db) => measureUpsertCeiling(db, 50_000));
    const genStart = performance.now();
    await svc.withDb((db) => appendJourney(db, workspaceId, total, customers));
    note(
      `${engine} setup: ${total} events over ${customers} customers written in ` +
        `${((performance.now() - genStart) / 1000).toFixed(1)} s`,
    );
    // The write counters before processing (the appends are the setup's, not processing's).
    const writes0 = await svc.withDb(readTableWrites);
    await svc.restart();

    const samples: number[] = [];
    phase = 'processing';
    const t0 = performance.now();
    const pids = svc.pids();
    const backends = engine === 'postgres' ? backendCpuSampler(PG_URL, pids) : null;
    await backends?.start();
    const cpu0 = { service: cpuOf(pids), machine: machineBusySeconds() };
    while (done < total) {
      await sleep(250);
      samples.push(memoryOf(svc.pid).rssMb);
      await backends?.sample();
      if (performance.now() - t0 > 30 * 60_000)
        throw new Error(`only ${done} of ${total} events after 30 min`);
    }
    const cpu = cpuPerEvent(cpu0, pids, total, (performance.now() - t0) / 1000);
    const backendSeconds = (await backends?.stop()) ?? null;
    const mem = memoryOf(svc.pid);
    const workerPeaks = pids.slice(1).map((pid) => memoryOf(pid).hwmMb);
    clearInterval(peakSampler);
    const whole = windowOf(batches, 0, total)!;
    const first = windowOf(batches, 0, Math.min(WINDOW, total))!;
    const last = windowOf(batches, Math.max(0, total - WINDOW), total)!;
    if (engine === 'pglite') await svc.halt();
    const writes = writesPerEvent(writes0, await svc.withDb(settledTableWrites), total);
    const facts = await svc.withDb(
      async (db) =>
        (
          await db.query<Record<string, number>>(
            `SELECT (SELECT count(*) FROM profiles WHERE merged_into IS NULL) AS live,
                    (SELECT count(*) FROM profiles WHERE merged_into IS NOT NULL) AS merged,
                    (SELECT count(*) FROM orders) AS orders, (SELECT count(*) FROM profile_lineage) AS lineage,
                    (SELECT count(*) FROM dead_letters) AS dead, (SELECT count(*) FROM event_backlog) AS waiting`,
          )
        ).rows[0]!,
    );
    const target = TARGET_EVENTS_PER_S[engine];
    report({
      name: `processing end-to-end, ${total} events (${engine})`,
      value: whole.rate,
      unit: 'events/s',
      ceiling: { value: ceiling, unit: 'profile upserts/s' },
      target: `≥ ${target} events/s`,
      pass: whole.rate >= target,
    });
    report({
      name: `processing, last ${WINDOW} vs first ${WINDOW} events (${engine})`,
      value: last.rate,
      unit: 'events/s',
      ceiling: { value: first.rate, unit: 'events/s (first window)' },
      target: `within ${MAX_SLOWDOWN * 100}% of the first window`,
      pass: last.rate >= first.rate * (1 - MAX_SLOWDOWN),
    });
    report({
      name: `claim time, last ${WINDOW} vs first ${WINDOW} events (${engine})`,
      value: last.claimMs,
      unit: 'ms per claim',
      ceiling: { value: first.claimMs, unit: 'ms (first window)' },
      target: 'no growth with the log (≤ 2 × the first window)',
      pass: last.claimMs <= Math.max(1, first.claimMs * 2),
    });
    const budgetUs = (cpu.cores * 1e6) / target;
    report({
      name: `processing CPU per event, whole machine (${engine})`,
      value: cpu.machineUs,
      unit: 'µs/event',
      ceiling: { value: budgetUs, unit: `µs/event (${cpu.cores} cores at the target rate)` },
      target: `≤ the budget: ${cpu.cores} cores can sustain ${target} events/s only below it`,
      pass: cpu.machineUs <= budgetUs,
    });
    note(
      `${engine}: CPU per event ${cpu.serviceUs.toFixed(0)} µs in the service` +
        (workers > 0 ? ` (its ${pids.length} processes)` : '') +
        (engine === 'postgres' ? `, ${cpu.restUs.toFixed(0)} µs elsewhere (the database, the bench)` : '') +
        `; cores busy ${(cpu.busy * 100).toFixed(0)}% of the run; at full use of ${cpu.cores} cores ` +
        `this work per event allows ${cpu.boundRate.toFixed(0)} events/s`,
    );
    if (backendSeconds !== null) {
      note(
        `${engine}: CPU per event of the service's own database backends ${((backendSeconds * 1e6) / total).toFixed(0)} µs ` +
          '(pg_stat_activity by application name; the machine-wide figure above also counts other work); ' +
          `lock waits: ${backends!.lockWaits()}`,
      );
    }
    note(
      `${engine}: written per event ${writes.rows.toFixed(2)} rows and ${writes.entries.toFixed(2)} index entries ` +
        `(pg_stat_user_tables): ${writes.byTable}`,
    );
    report({
      name: `processing peak RSS (${engine})`,
      value: mem.hwmMb,
      unit: 'MB',
      // PGlite's database lives in the service's own memory: its peak is reported, not held to the
      // service's target (which it would miss by the database's size, not by a leak).
      target:
        engine === 'pglite'
          ? `report only (the embedded database is in this process; < ${TARGET_RSS_MB} MB is PostgreSQL's)`
          : `< ${TARGET_RSS_MB} MB, flat`,
      pass: engine === 'pglite' ? undefined : mem.hwmMb < TARGET_RSS_MB,
    });
    if (workerPeaks.length > 0) {
      note(
        `${engine}: peak RSS of the extra worker processes ${workerPeaks.map((m) => m.toFixed(0)).join(', ')} MB`,
      );
    }
    const quarter = (q: number) =>
      samples[Math.min(samples.length - 1, Math.floor((samples.length - 1) * q))] ?? 0;
    note(
      `${engine}: ${batches.length} batches, ${deferred} claims deferred; RSS at 0/25/50/75/100%: ` +
        [0, 0.25, 0.5, 0.75, 1].map((q) => quarter(q).toFixed(0)).join('/') +
        ` MB; live profiles ${facts.live}, merged ${facts.merged}, orders ${facts.orders}, ` +
        `lineage rows ${facts.lineage}, dead letters ${facts.dead}, still waiting ${facts.waiting}`,
    );
    note(
      `${engine}: highest 20 ms sample ${peak.rssMb.toFixed(0)} MB during ${peak.phase}, ` +
        `${peak.done} events processed; the service's last messages then: ${peak.recent.join(' · ')}`,
    );
    // Each round of the population is one step of every journey (creations first, then merges,
    // orders…): the rate per tenth of the log says which kind of event costs what.
    const tenths = Array.from({ length: 10 }, (_, k) =>
      windowOf(batches, (k * total) / 10, ((k + 1) * total) / 10),
    );
    note(
      `${engine}: events/s per tenth of the log: ${tenths.map((w) => (w ? w.rate.toFixed(0) : '–')).join(' · ')}`,
    );
    const claimTotal = batches.reduce((a, b) => a + b.claimMs, 0);
    note(
      `${engine}: mean ms per batch: claim ${(claimTotal / batches.length).toFixed(1)}, ` +
        [...stepMs].map(([k, v]) => `${k} ${(v / batches.length).toFixed(1)}`).join(', '),
    );
    const analyzeMs = analyzes.reduce((a, b) => a + b.ms, 0);
    const longest = analyzes.reduce((a, b) => (b.ms > a.ms ? b : a), { table: '–', ms: 0 });
    const drainMs = batches.length > 1 ? batches.at(-1)!.time - batches[0]!.time : 0;
    note(
      `${engine}: statistics upkeep: ${analyzes.length} ANALYZEs of ${new Set(analyzes.map((a) => a.table)).size} tables, ` +
        `${Math.round(analyzeMs)} ms in all (${((100 * analyzeMs) / Math.max(1, drainMs)).toFixed(1)}% of the drain), ` +
        `longest ${Math.round(longest.ms)} ms (${longest.table})`,
    );
  } finally {
    // Also on a failed run: the sampler would read the status of a process that is gone.
    clearInterval(peakSampler);
    await svc?.stop();
  }
}

/**
 * CPU spent per processed event over the processing window: the service's own (with PGlite, the
 * database too) and the rest of the machine's (with PostgreSQL, its backends). Less noisy than a
 * rate on a shared machine, and it bounds the rate: `cores / CPU per event` is the most this work
 * could reach with every core busy, however well the loops overlap.
 */
function cpuPerEvent(
  start: { service: number; machine: number },
  pids: readonly number[],
  events: number,
  seconds: number,
) {
  const cores = availableParallelism();
  const service = cpuOf(pids) - start.service;
  const machine = machineBusySeconds() - start.machine;
  const us = (s: number) => (s * 1e6) / events;
  return {
    cores,
    serviceUs: us(service),
    restUs: us(machine - service),
    machineUs: us(machine),
    busy: machine / (cores * seconds),
    boundRate: (cores * events) / machine,
  };
}

const cpuOf = (pids: readonly number[]) => pids.reduce((sum, pid) => sum + cpuSecondsOf(pid), 0);

export default async function run(): Promise<void> {
  const total = Number(process.env.BENCH_EVENTS ?? 1_000_000);
  const customers = Number(process.env.BENCH_CUSTOMERS ?? Math.max(1, Math.round(total / 10)));
  for (const engine of await engines()) await runEngine(engine, total, customers);
}

// Runnable on its own too: `node --import tsx bench/processing.bench.ts`.
if (import.meta.url === `file://${process.argv[1]}`) {
  run().then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
      process.exit(1);
    },
  );
}
