/**
 * Issue 22, findings 7 and 8: how long a start takes, from the moment the process is spawned.
 *
 * - **First start** (an empty `DATA_DIR`, so PGlite creates its cluster; on PostgreSQL an empty
 *   schema) and **warm start** (the same database after a clean stop), on each engine. Two figures
 *   each: when the port answers (`GET /health` 200) and when the service is ready (`GET /ready`
 *   200). Ceilings, same run: for the port, a bare Node HTTP server's spawn-to-answer time; for
 *   ready, the storage work alone: a child process that opens the same kind of database and applies
 *   the same migrations, and nothing else (what no start can avoid).
 * - **After `kill -9`** under sustained batch ingest (PGlite; BENCH_RECOVERY_EVENTS acknowledged
 *   events, default 300,000): the port, /ready, the WAL left to replay (at most the checkpoint
 *   threshold, 64 MB, plus what is written between two checks) and the WAL the killed run wrote
 *   (what would have been replayed without the checkpoints).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/config';
import { openDb } from '../src/platform/db';
import { migrate } from '../src/platform/db/migrate';
import { initClusterInChild } from '../src/platform/db/pglite-worker';
import { dropSchema, type EngineName, engines, freePort, note, PG_URL, ROOT, report, sleep } from './lib';

/** docs/operations.md: the port answers within this long of the process starting. */
const PORT_BOUND_MS = 5000;
/** The ready figure may cost this much over the storage work alone (module loading, caches, the app). */
const READY_RATIO = 2;
const MAX_REPLAY_MB = 128;
const RECOVERY_EVENTS = Number(process.env.BENCH_RECOVERY_EVENTS ?? 300_000);
const CHILD_FLAG = 'CDP_STARTUP_BENCH_STORAGE';

// Run as a child (`CDP_STARTUP_BENCH_STORAGE=1`): the storage work of a start, and nothing else.
if (process.env[CHILD_FLAG]) {
  const db = await openDb(loadConfig(process.env));
  await migrate(db);
  process.stdout.write('storage ready\n');
  await db.close();
  process.exit(0);
}

const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL');
});

function spawnTracked(args: string[], env: Record<string, string>): ChildProcess {
  const c = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? tmpdir(), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(c);
  c.once('exit', () => children.delete(c));
  return c;
}

const exited = (c: ChildProcess) =>
  c.exitCode !== null || c.signalCode !== null
    ? Promise.resolve()
    : new Promise<void>((r) => c.once('exit', () => r()));

async function status(url: string): Promise<number> {
  try {
    return (await fetch(url, { signal: AbortSignal.timeout(1000) })).status;
  } catch {
    return 0;
  }
}

interface StartTimes {
  portMs: number;
  readyMs: number;
  proc: ChildProcess;
  logs: () => Array<Record<string, unknown>>;
}

/** Spawns `cdp start` and times, from the spawn, the first /health 200 and the first /ready 200. */
async function timedStart(env: Record<string, string>, port: number): Promise<StartTimes> {
  const t0 = performance.now();
  const proc = spawnTracked(['bin/cdp.mjs', 'start'], { ...env, PORT: String(port) });
  let out = '';
  let err = '';
  proc.stdout!.setEncoding('utf8').on('data', (d: string) => {
    out += d;
  });
  proc.stderr!.setEncoding('utf8').on('data', (d: string) => {
    err = (err + d).slice(-4000);
  });
  const base = `http://127.0.0.1:${port}`;
  let portMs = 0;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`cdp start exited (${proc.exitCode}): ${err}`);
    if (performance.now() - t0 > 300_000) throw new Error('cdp start was not ready within 300 s');
    if (!portMs && (await status(`${base}/health`)) === 200) portMs = performance.now() - t0;
    if (portMs && (await status(`${base}/ready`)) === 200) break;
    await sleep(20);
  }
  const logs = () =>
    out
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { portMs, readyMs: performance.now() - t0, proc, logs };
}

async function stop(proc: ChildProcess): Promise<void> {
  proc.kill('SIGTERM');
  const timer = setTimeout(() => proc.kill('SIGKILL'), 20_000);
  await exited(proc);
  clearTimeout(timer);
}

/** Spawn to the first 200 of a bare Node HTTP server: the least any process needs to answer. */
async function bareServerMs(): Promise<number> {
  const port = await freePort();
  const t0 = performance.now();
  const proc = spawnTracked(
    ['-e', `require('node:http').createServer((q, s) => s.end('ok')).listen(${port}, '127.0.0.1')`],
    {},
  );
  while ((await status(`http://127.0.0.1:${port}/`)) !== 200) await sleep(10);
  const ms = performance.now() - t0;
  proc.kill('SIGKILL');
  await exited(proc);
  return ms;
}

/** Spawn to "storage ready" of a child that only opens the database and applies the migrations. */
async function storageOnlyMs(env: Record<string, string>): Promise<number> {
  const t0 = performance.now();
  const proc = spawnTracked(['--import', 'tsx', 'bench/startup.bench.ts'], { ...env, [CHILD_FLAG]: '1' });
  let out = '';
  let err = '';
  proc.stdout!.setEncoding('utf8').on('data', (d: string) => {
    out += d;
  });
  proc.stderr!.setEncoding('utf8').on('data', (d: string) => {
    err += d;
  });
  while (!out.includes('storage ready')) {
    if (proc.exitCode !== null) throw new Error(`storage child exited (${proc.exitCode}): ${err}`);
    await sleep(10);
  }
  const ms = performance.now() - t0;
  await exited(proc);
  return ms;
}

/** A fresh database for one engine: its environment and how to remove it. */
function freshDatabase(engine: EngineName): { env: Record<string, string>; remove: () => Promise<void> } {
  const base = {
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    CDP_INITIAL_ADMIN_KEY: `cdp_sk_${randomBytes(32).toString('base64url')}`,
  };
  if (engine === 'pglite') {
    const dir = mkdtempSync(join(tmpdir(), 'cdp-bench-start-'));
    return {
      env: { ...base, DATA_DIR: dir },
      remove: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  const schema = `bench_${randomBytes(5).toString('hex')}`;
  return {
    env: { ...base, DATABASE_URL: PG_URL, DATABASE_SCHEMA: schema },
    remove: () => dropSchema(PG_URL, schema),
  };
}

function reportStart(
  label: string,
  times: { portMs: number; readyMs: number },
  bare: number,
  storage: number,
) {
  report({
    name: `startup ${label}: port answers`,
    value: times.portMs,
    unit: 'ms',
    ceiling: { value: bare, unit: 'ms (bare node server)' },
    target: `≤ ${PORT_BOUND_MS} ms`,
    pass: times.portMs <= PORT_BOUND_MS,
  });
  report({
    name: `startup ${label}: ready`,
    value: times.readyMs,
    unit: 'ms',
    ceiling: { value: storage, unit: 'ms (storage work alone)' },
    target: `≤ ${READY_RATIO}× ceiling`,
    pass: times.readyMs <= READY_RATIO * storage,
  });
}

async function firstAndWarm(engine: EngineName, bare: number): Promise<void> {
  // The ceilings first, each on a database of its own in the same state as the service's.
  const firstStorage = freshDatabase(engine);
  let storageFirst: number;
  let storageWarm: number;
  try {
    storageFirst = await storageOnlyMs(firstStorage.env);
    storageWarm = await storageOnlyMs(firstStorage.env);
  } finally {
    await firstStorage.remove();
  }

  const db = freshDatabase(engine);
  try {
    const port = await freePort();
    const first = await timedStart(db.env, port);
    const phases = first.logs().filter((l) => /creat|migrat|storage open|ready/.test(String(l.msg)));
    await stop(first.proc);
    const warm = await timedStart(db.env, port);
    await stop(warm.proc);
    reportStart(`${engine} first start`, first, bare, storageFirst);
    reportStart(`${engine} warm start`, warm, bare, storageWarm);
    const at = (msg: string) => phases.find((l) => l.msg === msg);
    note(
      `first start, from the service's own log: ${[
        at('created the embedded database')
          ? `cluster created in ${at('created the embedded database')!.ms} ms`
          : '',
        `storage open at ${at('storage open')?.ms} ms`,
        `${phases.filter((l) => /^migration \d+ of/.test(String(l.msg))).length} migrations`,
        `ready ${at('cdp ready')?.ms} ms after the process began`,
      ]
        .filter(Boolean)
        .join(', ')}`,
    );
  } finally {
    await db.remove();
  }
}

/** The bigger case of finding 7: kill -9 under sustained batch ingest, then a restart. */
async function afterKill(): Promise<void> {
  const db = freshDatabase('pglite');
  const dir = db.env.DATA_DIR!;
  try {
    // The cluster is created first, so the WAL the service writes can be told from initdb's.
    await initClusterInChild(dir);
    const startRedo = readFileSync(join(dir, 'global', 'pg_control')).readBigUInt64LE(40);
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const first = await timedStart({ ...db.env, LOG_LEVEL: 'warn' }, port);
    const key = db.env.CDP_INITIAL_ADMIN_KEY!;
    const patched = await fetch(`${base}/tenant/settings`, {
      method: 'PATCH',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({
        rate_limits: { requests_per_minute: 100_000_000, batch_events_per_minute: 1_000_000_000 },
      }),
    });
    if (patched.status !== 200) throw new Error(`raising the rate limits answered ${patched.status}`);

    let acked = 0;
    let stopLoad = false;
    let seq = 0;
    const t0 = performance.now();
    const client = async () => {
      while (!stopLoad) {
        const events = Array.from({ length: 1000 }, () => {
          const i = seq++;
          const c = i % 20_000;
          return {
            event_type: i % 10 === 0 ? 'identify' : 'track',
            event_name: 'Product Viewed',
            identity: `customer${c}@example.com`,
            payload: { product_id: `p-${i % 500}`, price: 19.99, email: `customer${c}@example.com` },
          };
        });
        try {
          const res = await fetch(`${base}/tenant/ingest/batch`, {
            method: 'POST',
            headers: { 'x-api-key': key, 'content-type': 'application/json' },
            body: JSON.stringify(events),
          });
          if (res.status === 202) acked += events.length;
          await res.arrayBuffer();
        } catch {
          return;
        }
      }
    };
    const loops = Array.from({ length: 4 }, client);
    while (acked < RECOVERY_EVENTS && performance.now() - t0 < 600_000) await sleep(200);
    const ingestS = (performance.now() - t0) / 1000;
    first.proc.kill('SIGKILL');
    await exited(first.proc);
    stopLoad = true;
    await Promise.all(loops);

    const { pendingRecovery } = await import('../src/platform/db/pglite-recovery');
    const pending = pendingRecovery(dir);
    const writtenMb = pending
      ? Number(pending.redo + BigInt(pending.walBytes) - startRedo) / 1048576
      : Number.NaN;

    const again = await timedStart(db.env, port);
    const logs = again.logs();
    const replay = logs.find((l) => l.msg === 'recovering the embedded database after an unclean stop');
    const recovered = logs.find((l) => l.msg === 'recovered the embedded database');
    await stop(again.proc);

    const label = `startup pglite after kill -9 (${Math.round(acked / 1000)}k events in ${Math.round(ingestS)} s)`;
    report({
      name: `${label}: port answers`,
      value: again.portMs,
      unit: 'ms',
      target: `≤ ${PORT_BOUND_MS} ms`,
      pass: again.portMs <= PORT_BOUND_MS,
    });
    report({ name: `${label}: ready`, value: again.readyMs, unit: 'ms', target: 'none (reported)' });
    report({
      name: `${label}: WAL replayed`,
      value: Number(replay?.wal_mb ?? Number.NaN),
      unit: 'MB',
      ceiling: { value: writtenMb, unit: 'MB written by the killed run' },
      target: `≤ ${MAX_REPLAY_MB} MB`,
      pass: Number(replay?.wal_mb ?? Number.POSITIVE_INFINITY) <= MAX_REPLAY_MB,
    });
    note(`recovery (PGlite's open, replay included): ${recovered?.ms ?? '?'} ms`);
  } finally {
    await db.remove();
  }
}

export default async function run(): Promise<void> {
  const bare = await bareServerMs();
  note(`bare node server, spawn to first answer: ${Math.round(bare)} ms`);
  for (const engine of await engines()) await firstAndWarm(engine, bare);
  if ((await engines()).includes('pglite') && RECOVERY_EVENTS > 0) await afterKill();
}
