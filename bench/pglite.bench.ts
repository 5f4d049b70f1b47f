/**
 * PGlite in a worker thread (the default) against PGlite on the main thread (PGLITE_IN_PROCESS=1).
 * PGlite's WASM runs synchronously, so on the main thread a long statement stops the event loop:
 * nothing else is answered until it ends. The questions, measured on both:
 *
 * 1. How long does GET /health take while a 2-second statement runs?
 * 2. What does the thread hop cost? Single-row INSERTs through the storage port (10 and 100
 *    concurrent callers), and a 100-row INSERT per transaction (the group-commit shape).
 * 3. On the real service: /health p99 while 1000-event batches are being ingested and applied,
 *    and the batch throughput itself.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import type { Db } from '../src/platform/db';
import { createPgliteDb } from '../src/platform/db/pglite';
import { load, note, report, type Service, sleep, startService } from './lib';

const MODES = [
  { label: 'worker thread', inProcess: false },
  { label: 'in-process', inProcess: true },
] as const;

async function withDb<T>(inProcess: boolean, fn: (db: Db) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'cdp-bench-pglite-'));
  const db = await createPgliteDb({ dataDir: dir, inProcess });
  try {
    return await fn(db);
  } finally {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Worst GET /health latency while `SELECT pg_sleep(2)` runs. Probes are due every 20 ms and each
 * one's latency is counted from when it was due, not from when it could be sent: the client shares
 * this event loop, so a stalled loop delays the sending too (coordinated omission).
 */
async function healthDuringLongStatement(db: Db): Promise<{ worst: number; probes: number }> {
  const app = Fastify({ logger: false });
  app.get('/health', async () => ({ status: 'ok' }));
  const url = `${await app.listen({ port: 0, host: '127.0.0.1' })}/health`;
  try {
    const long = sleep(300).then(() => db.query('SELECT pg_sleep(2)'));
    const start = performance.now();
    let worst = 0;
    let probes = 0;
    for (let due = start; due < start + 3000; due += 20) {
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      await (await fetch(url)).text();
      worst = Math.max(worst, performance.now() - due);
      probes++;
    }
    await long;
    return { worst, probes };
  } finally {
    await app.close();
  }
}

/** Rows per second through the port with `callers` concurrent callers for `seconds`. */
async function insertRate(db: Db, callers: number, rowsPerCall: number, seconds: number): Promise<number> {
  const payload = JSON.stringify({ path: '/products/42', referrer: 'https://search.example/', n: 1 });
  const values = Array.from({ length: rowsPerCall }, (_, i) => `($${i * 2 + 1}, $${i * 2 + 2}::jsonb)`).join(
    ', ',
  );
  const sql = `INSERT INTO bench_events (id, payload) VALUES ${values}`;
  let rows = 0;
  const until = Date.now() + seconds * 1000;
  const started = Date.now();
  const caller = async () => {
    while (Date.now() < until) {
      const params: unknown[] = [];
      for (let i = 0; i < rowsPerCall; i++) params.push(randomUUID(), payload);
      if (rowsPerCall === 1) await db.query(sql, params);
      else await db.transaction((tx) => tx.query(sql, params));
      rows += rowsPerCall;
    }
  };
  await Promise.all(Array.from({ length: callers }, caller));
  return rows / ((Date.now() - started) / 1000);
}

function batchOf(n: number): string {
  const anonymous_id = randomUUID();
  return JSON.stringify(
    Array.from({ length: n }, (_, i) => ({
      event_type: 'track',
      event_name: 'Viewed',
      anonymous_id: i % 10 === 0 ? randomUUID() : anonymous_id,
      payload: { path: `/products/${i}`, position: i },
    })),
  );
}

/** Keeps 2 lanes of 1000-event batches going until `stop` resolves; returns accepted events/s. */
async function ingestUntil(svc: Service, stop: Promise<unknown>): Promise<number> {
  let done = false;
  void stop.then(() => {
    done = true;
  });
  let accepted = 0;
  const started = Date.now();
  const lane = async () => {
    while (!done) {
      const res = await fetch(`${svc.url}/tenant/ingest/batch`, {
        method: 'POST',
        headers: { 'x-api-key': svc.adminKey, 'content-type': 'application/json' },
        body: batchOf(1000),
      });
      await res.text();
      if (res.status === 202) accepted += 1000;
    }
  };
  await Promise.all([lane(), lane()]);
  return accepted / ((Date.now() - started) / 1000);
}

export default async function run(): Promise<void> {
  // 1. /health during a 2 s statement.
  for (const m of MODES) {
    const r = await withDb(m.inProcess, healthDuringLongStatement);
    report({
      name: `pglite ${m.label} GET /health worst latency during a 2 s statement`,
      value: r.worst,
      unit: 'ms',
      target: '≤ 50 ms',
      pass: r.worst <= 50,
    });
  }

  // 2. The cost of the thread hop.
  const rates: Record<string, Record<string, number>> = {};
  for (const m of MODES) {
    rates[m.label] = await withDb(m.inProcess, async (db) => {
      await db.exec(`CREATE TABLE bench_events (
        seq bigserial PRIMARY KEY, id text NOT NULL UNIQUE, payload jsonb NOT NULL,
        received_at timestamptz NOT NULL DEFAULT now())`);
      return {
        'single-row INSERT, 10 callers': await insertRate(db, 10, 1, 5),
        'single-row INSERT, 100 callers': await insertRate(db, 100, 1, 5),
        '100-row INSERT per transaction, 10 callers': await insertRate(db, 10, 100, 5),
      };
    });
  }
  for (const shape of Object.keys(rates['in-process']!)) {
    const inProcess = rates['in-process']![shape]!;
    const worker = rates['worker thread']![shape]!;
    report({
      name: `pglite worker thread ${shape} through the port`,
      value: worker,
      unit: 'rows/s',
      ceiling: { value: inProcess, unit: 'rows/s (in-process)' },
      target: '≥ 0.80 of in-process',
      pass: worker >= 0.8 * inProcess,
    });
  }

  // 3. The real service: /health while batches are ingested and applied.
  for (const m of MODES) {
    const svc = await startService({
      engine: 'pglite',
      env: m.inProcess ? { PGLITE_IN_PROCESS: '1' } : {},
    });
    try {
      const probe = load({ url: `${svc.url}/health`, connections: 10, duration: 8, warmup: 0 });
      const rate = await ingestUntil(svc, probe);
      const health = await probe;
      report({
        name: `pglite ${m.label} service GET /health p99 while ingesting batches`,
        value: health.p99,
        unit: 'ms',
        target: '≤ 50 ms',
        pass: health.p99 <= 50,
      });
      note(
        `/health p50 ${health.p50} ms, ${health.rps.toFixed(0)} req/s; batch ingest meanwhile ${rate.toFixed(0)} events/s`,
      );
    } finally {
      await svc.stop();
    }
  }
}
