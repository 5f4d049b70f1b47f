/**
 * Shared tools for the benchmarks (`npm run bench`). The API is small on purpose and stable: other
 * bench files import it. Every figure a bench prints is measured in the same run as its ceiling,
 * because this machine (2 cores) is shared and noisy; figures from another run are not comparable.
 *
 *   engines()                  which engines to run: PGlite always, PostgreSQL when reachable
 *   startService(opts)         the real service (`node bin/cdp.mjs start`) as a child process, on a
 *                              fresh database with raised rate limits; stop() removes everything
 *   startBareServer(routes)    a bare Fastify child process serving fixed bytes: the ceiling
 *   load(opts)                 one bounded autocannon run (≤ 10 s): req/s, p50, p99, non-2xx
 *   memoryOf(pid)              VmRSS and VmHWM of a process, in MB
 *   report(line)               prints `<name>: <figure> <unit>  ceiling …  ratio …  target …  PASS|MISS`
 *
 * Children are killed and temp dirs / schemas dropped on stop(), and on exit or Ctrl-C as a last
 * resort (see `cleanup`).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { loadConfig } from '../src/config';
import { bootstrapDefaultWorkspace } from '../src/modules/workspaces/workspaces.service';
import { type Db, openDb } from '../src/platform/db';
import { migrate } from '../src/platform/db/migrate';
import { POSTGRES_POOL_SIZE } from '../src/platform/db/postgres';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/** PostgreSQL used by the benches: BENCH_DATABASE_URL, else the local test server. */
export const PG_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** The longest a single load run may last, whatever a bench asks for. */
export const MAX_LOAD_SECONDS = 10;

/** Rate limits written into the bench workspace so that the limiter never refuses a bench request. */
export const BENCH_RATE_LIMITS = {
  rate_limits: { requests_per_minute: 100_000_000, batch_events_per_minute: 1_000_000_000 },
};

export type EngineName = 'pglite' | 'postgres';

// ---------------------------------------------------------------------------------------------
// Cleanup: whatever happens, no child process, temp dir or schema outlives the bench run.

const cleanups = new Set<() => Promise<void>>();
const children = new Set<ChildProcess>();

/** Runs every pending cleanup (stop() of services and servers). bench/run.ts calls it at the end. */
export async function cleanup(): Promise<void> {
  for (const fn of [...cleanups].reverse()) await fn().catch(() => {});
  cleanups.clear();
}

process.on('exit', () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    void cleanup().finally(() => process.exit(130));
  });
}

function track(child: ChildProcess): void {
  children.add(child);
  child.once('exit', () => children.delete(child));
}

async function stopChild(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

// ---------------------------------------------------------------------------------------------
// Engines and databases

/** True when a PostgreSQL server answers at `url` within 2 s. */
export async function postgresReachable(url: string = PG_URL): Promise<boolean> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await c.connect();
    await c.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await c.end().catch(() => {});
  }
}

/** The engines to benchmark: PGlite always, PostgreSQL when reachable (BENCH_ENGINES=pglite,… narrows). */
export async function engines(): Promise<EngineName[]> {
  const wanted = (process.env.BENCH_ENGINES ?? 'pglite,postgres').split(',').map((s) => s.trim());
  const out: EngineName[] = [];
  if (wanted.includes('pglite')) out.push('pglite');
  if (wanted.includes('postgres')) {
    if (await postgresReachable()) out.push('postgres');
    else process.stdout.write(`(PostgreSQL not reachable at ${PG_URL}: PostgreSQL figures skipped)\n`);
  }
  return out;
}

/**
 * A free TCP port on 127.0.0.1 (released before return; a race with another process is unlikely):
 * any the system gives, or the first free one of BENCH_PORTS (`30600-30699`) on a machine where
 * each user keeps to a range.
 */
export async function freePort(): Promise<number> {
  const range = /^(\d+)-(\d+)$/.exec(process.env.BENCH_PORTS ?? '');
  if (!range) return listenOnce(0);
  for (let port = Number(range[1]); port <= Number(range[2]); port++) {
    if (handedOut.has(port)) continue;
    const got = await listenOnce(port).catch(() => null);
    if (got !== null) {
      handedOut.add(got);
      return got;
    }
  }
  throw new Error(`no free port in BENCH_PORTS=${process.env.BENCH_PORTS}`);
}

/** Ports of BENCH_PORTS given out already: the child may not be listening on one yet. */
const handedOut = new Set<number>();

function listenOnce(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(port, '127.0.0.1', () => {
      const { port: got } = srv.address() as { port: number };
      srv.close(() => resolve(got));
    });
  });
}

/** Drops a PostgreSQL schema and everything in it. */
export async function dropSchema(url: string, schema: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    await c.end();
  }
}

/**
 * Prepares a database the way a first start would (migrations, workspace `default` with the given
 * admin key) and raises its rate limits. It runs in this process before the service starts, because
 * an embedded PGlite directory can only be open in one process at a time.
 */
async function prepareDatabase(env: Record<string, string>, settings: Record<string, unknown> | null) {
  const config = loadConfig(env);
  const db = await openDb(config);
  try {
    await migrate(db);
    const created = await bootstrapDefaultWorkspace(db, config.initialAdminKey);
    if (!created) throw new Error('bench database was not empty');
    if (settings) {
      await db.query('UPDATE workspaces SET settings = settings || $2::jsonb WHERE id = $1', [
        created.workspace.id,
        JSON.stringify(settings),
      ]);
    }
    return created.workspace.id;
  } finally {
    await db.close();
  }
}

// ---------------------------------------------------------------------------------------------
// The service under test

export interface ServiceOptions {
  engine: EngineName;
  /** Extra environment for the child (e.g. ROLE=api, PGLITE_IN_PROCESS=1). */
  env?: Record<string, string>;
  /**
   * 'prepared' (default): migrations, workspace and raised rate limits are in place before the
   * service starts. 'empty': the service starts on an empty database and bootstraps itself, as a
   * user's very first start does (default rate limits then apply).
   */
  database?: 'prepared' | 'empty';
  /** Extra node flags for the child, e.g. ['--cpu-prof', '--cpu-prof-dir=/tmp/prof']. */
  nodeArgs?: string[];
  /** Receives each line the child writes to stdout (its JSON log at LOG_LEVEL); ignored when absent. */
  onStdoutLine?: (line: string) => void;
  /**
   * PostgreSQL only: this many more processes (`ROLE=worker`, the same database and settings) run
   * beside the service and stop and start with it; their stdout goes to `onStdoutLine` too.
   */
  workers?: number;
}

export interface Service {
  engine: EngineName;
  /** http://127.0.0.1:PORT */
  url: string;
  pid: number;
  /** The service's process and its extra workers' (`workers`), while they run. */
  pids(): number[];
  adminKey: string;
  /** Set when the database was prepared (null for 'empty' until the service bootstraps it). */
  workspaceId: string | null;
  /** Whatever the child wrote to stderr so far (warnings and errors at LOG_LEVEL=warn). */
  stderr(): string;
  /** SIGTERM (SIGKILL after 10 s), then removes the data dir or drops the schema. */
  stop(): Promise<void>;
  /** Stops the process only (SIGTERM, a clean shutdown), keeping its database. */
  halt(): Promise<void>;
  /** Starts the process again on the same database (halting it first if it runs). */
  restart(): Promise<void>;
  /**
   * Opens the service's database through the storage port and runs fn. On PostgreSQL this works
   * while the service runs; an embedded PGlite directory only while the service is halted.
   */
  withDb<T>(fn: (db: Db) => Promise<T>): Promise<T>;
}

/** Starts `node bin/cdp.mjs start` on a fresh database and waits until /ready answers 200. */
export async function startService(opts: ServiceOptions): Promise<Service> {
  const adminKey = `cdp_sk_${randomBytes(32).toString('base64url')}`;
  const port = await freePort();
  const env: Record<string, string> = {
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    CDP_INITIAL_ADMIN_KEY: adminKey,
    // BENCH_NODE_OPTIONS tries V8 or Node settings on the service without changing the code.
    ...(process.env.BENCH_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_NODE_OPTIONS } : {}),
    ...(opts.env ?? {}),
    // BENCH_SERVICE_ENV="WORKER_BATCH_SIZE=2000 …" tries the service's own settings the same way.
    ...Object.fromEntries(
      (process.env.BENCH_SERVICE_ENV ?? '')
        .split(/\s+/)
        .filter(Boolean)
        .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
    ),
  };
  let dataDir: string | null = null;
  let schema: string | null = null;
  if (opts.engine === 'pglite') {
    dataDir = mkdtempSync(join(tmpdir(), 'cdp-bench-'));
    env.DATA_DIR = dataDir;
  } else {
    schema = `bench_${randomBytes(5).toString('hex')}`;
    env.DATABASE_URL = PG_URL;
    env.DATABASE_SCHEMA = schema;
  }
  const removeDatabase = async () => {
    // BENCH_KEEP_SCHEMA=1 leaves a PostgreSQL run's schema behind, to inspect its plans afterwards.
    if (schema && process.env.BENCH_KEEP_SCHEMA) return note(`kept schema ${schema}`);
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    if (schema) await dropSchema(PG_URL, schema).catch(() => {});
  };

  if ((opts.workers ?? 0) > 0 && opts.engine !== 'postgres') throw new Error('extra workers need PostgreSQL');
  let child: ChildProcess | null = null;
  let workers: ChildProcess[] = [];
  let stderr = '';
  const stopWorkers = async () => {
    await Promise.all(workers.map((w) => stopChild(w)));
    workers = [];
  };
  const stopAll = async () => {
    await stopWorkers();
    if (child) await stopChild(child);
    await removeDatabase();
  };
  cleanups.add(stopAll);

  const spawnOne = (extraEnv: Record<string, string>) => {
    const c = spawn(process.execPath, [...(opts.nodeArgs ?? []), 'bin/cdp.mjs', 'start'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? tmpdir(), ...env, ...extraEnv },
      stdio: ['ignore', opts.onStdoutLine ? 'pipe' : 'ignore', 'pipe'],
    });
    track(c);
    if (opts.onStdoutLine) {
      const onLine = opts.onStdoutLine;
      let partial = '';
      c.stdout!.setEncoding('utf8');
      c.stdout!.on('data', (d: string) => {
        const lines = (partial + d).split('\n');
        partial = lines.pop() ?? '';
        for (const line of lines) onLine(line);
      });
    }
    c.stderr!.setEncoding('utf8');
    c.stderr!.on('data', (d: string) => {
      stderr = (stderr + d).slice(-20_000);
    });
    return c;
  };
  const launch = async () => {
    stderr = '';
    const c = spawnOne({});
    child = c;
    // A worker binds no port: its start is its log line, which needs no wait here (the bench
    // counts the batches of every process from their logs).
    workers = Array.from({ length: opts.workers ?? 0 }, () => spawnOne({ ROLE: 'worker' }));
    await waitForReady(`http://127.0.0.1:${port}`, c, () => stderr);
    return c;
  };

  try {
    const workspaceId =
      (opts.database ?? 'prepared') === 'prepared' ? await prepareDatabase(env, BENCH_RATE_LIMITS) : null;
    const first = await launch();
    return {
      engine: opts.engine,
      url: `http://127.0.0.1:${port}`,
      get pid() {
        return (child ?? first).pid!;
      },
      pids: () => [child ?? first, ...workers].map((c) => c.pid!),
      adminKey,
      workspaceId,
      stderr: () => stderr,
      async stop() {
        cleanups.delete(stopAll);
        await stopAll();
      },
      async halt() {
        await stopWorkers();
        if (child) await stopChild(child);
      },
      async restart() {
        await stopWorkers();
        if (child) await stopChild(child);
        await launch();
      },
      async withDb(fn) {
        const running = child !== null && child.exitCode === null && child.signalCode === null;
        if (dataDir && running) throw new Error('halt() the service before opening its PGlite directory');
        // Setup statements (a million-row INSERT) run far longer than a request's statement bound.
        const db = await openDb(loadConfig({ ...env, DATABASE_STATEMENT_TIMEOUT_MS: '3600000' }));
        try {
          return await fn(db);
        } finally {
          await db.close();
        }
      },
    };
  } catch (err) {
    cleanups.delete(stopAll);
    await stopAll();
    throw err;
  }
}

async function waitForReady(url: string, child: ChildProcess, stderr: () => string): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`service exited (${child.exitCode ?? child.signalCode}) before /ready:\n${stderr()}`);
    }
    try {
      const res = await fetch(`${url}/ready`, { signal: AbortSignal.timeout(1000) });
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(`service was not ready (/ready) within 120 s:\n${stderr()}`);
}

// ---------------------------------------------------------------------------------------------
// The ceiling: a bare Fastify server

export interface BareRoute {
  method: 'GET' | 'POST';
  path: string;
  status: number;
  /** The exact bytes to answer with. */
  body: string;
  contentType?: string;
  /**
   * A PostgreSQL statement run (on a pool of the service's size) before answering: the ceiling of
   * a route that must read the database once, as every list route does.
   */
  query?: { url: string; sql: string };
}

export interface BareServer {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

const BARE_SERVER_SOURCE = `
import Fastify from 'fastify';
import pg from 'pg';
const routes = JSON.parse(process.env.BARE_ROUTES);
const app = Fastify({ logger: false });
for (const r of routes) {
  const body = Buffer.from(r.body);
  const pool = r.query ? new pg.Pool({ connectionString: r.query.url, max: ${POSTGRES_POOL_SIZE} }) : null;
  app.route({ method: r.method, url: r.path, handler: pool
    ? async (req, reply) => {
        await pool.query(r.query.sql);
        return reply.code(r.status).type(r.contentType).send(body);
      }
    : (req, reply) => {
        reply.code(r.status).type(r.contentType).send(body);
      } });
}
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
`;

/**
 * A bare Fastify 5 server in a child process answering fixed bytes: the most this framework on this
 * machine can do, against which the service's figures are read. POST routes parse JSON bodies (as
 * Fastify does by default) and discard them.
 */
export async function startBareServer(routes: BareRoute[]): Promise<BareServer> {
  const port = await freePort();
  const payload = routes.map((r) => ({
    ...r,
    contentType: r.contentType ?? 'application/json; charset=utf-8',
  }));
  let stderr = '';
  const child = spawn(process.execPath, ['--input-type=module', '-e', BARE_SERVER_SOURCE], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', PORT: String(port), BARE_ROUTES: JSON.stringify(payload) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  track(child);
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (d: string) => {
    stderr += d;
  });
  const stop = async () => {
    cleanups.delete(stop);
    await stopChild(child, 2000);
  };
  cleanups.add(stop);
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`bare server exited: ${stderr}`);
    try {
      await fetch(url, { signal: AbortSignal.timeout(500) });
      break;
    } catch {
      if (Date.now() > deadline) {
        await stop();
        throw new Error(`bare server did not start: ${stderr}`);
      }
      await sleep(50);
    }
  }
  return { url, pid: child.pid!, stop };
}

// ---------------------------------------------------------------------------------------------
// Load

export interface LoadOptions {
  url: string;
  method?: 'GET' | 'POST' | 'DELETE' | 'PATCH' | 'PUT' | 'OPTIONS';
  headers?: Record<string, string>;
  /** Body sent with every request. */
  body?: string;
  /**
   * Bodies sent in turn (one per request, cycling), for requests that must differ (e.g. fresh
   * ids); overrides `body`. Buffers go as they are (compressed bodies).
   */
  bodies?: Array<string | Buffer>;
  connections: number;
  /** Seconds; capped at MAX_LOAD_SECONDS. */
  duration: number;
  /** Seconds of unmeasured load first (JIT warm-up, caches); default 2, capped at 10 too. */
  warmup?: number;
  /** A steady rate (requests/s over all connections) instead of as fast as possible. */
  overallRate?: number;
}

export interface LoadResult {
  /** Mean 2xx responses per second over the measured run. */
  rps: number;
  /** Latency percentiles in milliseconds. */
  p50: number;
  p99: number;
  /** Total responses (any status) in the measured run. */
  requests: number;
  non2xx: number;
  /** Connection errors and timeouts. */
  errors: number;
  seconds: number;
}

interface AutocannonResult {
  requests: { total: number; average: number };
  latency: { p50: number; p99: number };
  non2xx: number;
  errors: number;
  timeouts: number;
  duration: number;
  '2xx': number;
}
type Autocannon = (opts: Record<string, unknown>) => Promise<AutocannonResult>;
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

async function runAutocannon(opts: LoadOptions, seconds: number): Promise<AutocannonResult> {
  const base: Record<string, unknown> = {
    url: opts.url,
    method: opts.method ?? 'GET',
    headers: opts.headers ?? {},
    connections: opts.connections,
    duration: seconds,
    timeout: 10,
    ...(opts.overallRate ? { overallRate: opts.overallRate } : {}),
  };
  if (opts.bodies && opts.bodies.length > 0) {
    const bodies = opts.bodies;
    let i = 0;
    base.requests = [
      {
        setupRequest: (req: Record<string, unknown>) => {
          req.body = bodies[i++ % bodies.length];
          return req;
        },
      },
    ];
  } else if (opts.body !== undefined) {
    base.body = opts.body;
  }
  return autocannon(base);
}

/** One bounded autocannon run from this process (after an unmeasured warm-up). */
export async function load(opts: LoadOptions): Promise<LoadResult> {
  const warmup = Math.min(Math.max(0, opts.warmup ?? 2), MAX_LOAD_SECONDS);
  const seconds = Math.min(Math.max(1, opts.duration), MAX_LOAD_SECONDS);
  if (warmup > 0) await runAutocannon(opts, warmup);
  const r = await runAutocannon(opts, seconds);
  return {
    rps: r['2xx'] / r.duration,
    p50: r.latency.p50,
    p99: r.latency.p99,
    requests: r.requests.total,
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts,
    seconds: r.duration,
  };
}

// ---------------------------------------------------------------------------------------------
// Memory

export interface Memory {
  /** Resident set size now, MB. */
  rssMb: number;
  /** Peak resident set size since the process started, MB. */
  hwmMb: number;
}

/** VmRSS and VmHWM of a process (Linux /proc). */
export function memoryOf(pid: number): Memory {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) =>
    Number(new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rssMb: kb('VmRSS') / 1024, hwmMb: kb('VmHWM') / 1024 };
}

// ---------------------------------------------------------------------------------------------
// CPU

/** Clock ticks per second of /proc's CPU times (USER_HZ: 100 on every Linux this runs on). */
const TICKS_PER_S = 100;

/** CPU seconds a process has used so far, user and system (Linux /proc/<pid>/stat). */
export function cpuSecondsOf(pid: number): number {
  // The command name (field 2) may hold spaces: count fields from the closing parenthesis.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / TICKS_PER_S; // utime, stime (fields 14 and 15)
}

/** CPU seconds the whole machine has spent busy so far (all cores; idle and I/O wait excluded). */
export function machineBusySeconds(): number {
  const [, ...t] = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/);
  const [user, nice, system, , , irq, softirq, steal] = t.map(Number);
  return (user! + nice! + system! + irq! + softirq! + steal!) / TICKS_PER_S;
}

// ---------------------------------------------------------------------------------------------
// Output

export interface Line {
  name: string;
  value: number;
  unit: string;
  /** The reference figure measured in the same run, when the target is relative to one. */
  ceiling?: { value: number; unit: string };
  /** Human-readable target, e.g. '≥ 0.70 of ceiling' or '≤ 5 ms'. */
  target: string;
  /** Whether the target is met; undefined prints INFO (a figure with no target). */
  pass?: boolean;
}

const fmt = (n: number): string =>
  !Number.isFinite(n) ? String(n) : Math.abs(n) >= 100 ? String(Math.round(n)) : n.toFixed(n >= 10 ? 1 : 2);

/** Formats one result line: `<name>: <figure> <unit>  ceiling <figure> <unit>  ratio <x.xx>  target <…>  PASS|MISS`. */
export function formatLine(l: Line): string {
  const parts = [`${l.name}: ${fmt(l.value)} ${l.unit}`];
  if (l.ceiling) {
    parts.push(`ceiling ${fmt(l.ceiling.value)} ${l.ceiling.unit}`);
    parts.push(`ratio ${(l.ceiling.value > 0 ? l.value / l.ceiling.value : 0).toFixed(2)}`);
  }
  parts.push(`target ${l.target}`);
  parts.push(l.pass === undefined ? 'INFO' : l.pass ? 'PASS' : 'MISS');
  return parts.join('  ');
}

const results: Line[] = [];

/** Prints a result line and records it for the summary that bench/run.ts prints at the end. */
export function report(l: Line): void {
  results.push(l);
  process.stdout.write(`${formatLine(l)}\n`);
}

/** Free-form context under the result lines (indented so that result lines stay greppable). */
export function note(text: string): void {
  process.stdout.write(`  ${text}\n`);
}

/** Every line reported so far in this process. */
export function reported(): readonly Line[] {
  return results;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * One request to a running service with its admin key, as a client sends it: the status, the
 * parsed body (null when empty) and the text.
 */
export async function callApi(
  svc: Pick<Service, 'url' | 'adminKey'>,
  method: string,
  path: string,
  body?: unknown,
  // biome-ignore lint/suspicious/noExplicitAny: the API's answer, read field by field after its status
): Promise<{ status: number; body: any; text: string }> {
  const res = await fetch(`${svc.url}${path}`, {
    method,
    headers: {
      'x-api-key': svc.adminKey,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, text };
}
