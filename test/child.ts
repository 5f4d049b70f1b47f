import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { testEnv } from './harness';
import { waitUntil } from './wait';

/**
 * The real service as a child process (`node bin/cdp.mjs …`), for what only separate processes
 * can show: cross-process revocation and rate limits, the CLI, signals. Children listen on PORT=0
 * and the helper reads the bound address from the `cdp listening` log line, so parallel test files
 * never fight over ports. Every child is killed when the test process exits, even after a failure.
 */
export const ROOT = fileURLToPath(new URL('..', import.meta.url));
/**
 * The `cdp` command: the run's JavaScript bundle of it when test/global-setup.ts made one (seconds
 * faster to start than the sources through the TypeScript loader), else bin/cdp.mjs.
 */
const CDP = process.env.CDP_TEST_ENTRY || join(ROOT, 'bin', 'cdp.mjs');

const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of running) c.kill('SIGKILL');
});

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ServiceProcess {
  /** `http://127.0.0.1:<port>`; null for ROLE=worker. */
  url: string | null;
  pid: number;
  /** Milliseconds from spawn to the first 200 from /ready (or to `worker running`). */
  startupMs: number;
  stdout(): string;
  stderr(): string;
  /** The JSON log lines written so far. */
  logs(): Array<Record<string, unknown>>;
  readonly exited: Promise<Exit>;
  kill(signal?: NodeJS.Signals): void;
  /** SIGTERM, then SIGKILL if still running after `timeoutMs`; resolves with the exit. */
  stop(timeoutMs?: number): Promise<Exit>;
}

/** Environment for a child service: the harness's (fresh schema on PostgreSQL), logging at info. */
export function serviceEnv(extra: Record<string, string> = {}): Record<string, string> {
  return testEnv({ LOG_LEVEL: 'info', PORT: '0', HOST: '127.0.0.1', ...extra });
}

function spawnCdp(args: string[], env: Record<string, string>): ChildProcess {
  // Only what Node needs from the parent: the rest of the environment is exactly `env`.
  const base: Record<string, string> = {};
  for (const k of ['PATH', 'HOME', 'TMPDIR', 'LANG']) if (process.env[k]) base[k] = process.env[k]!;
  const child = spawn(process.execPath, [CDP, ...args], {
    cwd: ROOT,
    env: { ...base, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  child.on('exit', () => running.delete(child));
  return child;
}

function exitOf(child: ChildProcess): Promise<Exit> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      resolve({ code: child.exitCode, signal: child.signalCode });
      return;
    }
    // 'close' comes after 'exit' once stdout and stderr are drained, so no output is lost.
    child.once('close', (code, signal) => resolve({ code, signal }));
  });
}

/** The JSON log lines in a service's output. */
export const parseLogs = (text: string): Array<Record<string, unknown>> =>
  text
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .flatMap((l) => {
      try {
        return [JSON.parse(l) as Record<string, unknown>];
      } catch {
        return [];
      }
    });

/**
 * Starts `cdp start` and waits until it serves (/ready 200), or until a worker says it runs;
 * `until: 'port'` returns as soon as the port is bound (`cdp listening`), while it still starts.
 */
export async function startService(
  env: Record<string, string>,
  opts: { timeoutMs?: number; until?: 'ready' | 'port' } = {},
): Promise<ServiceProcess> {
  const t0 = performance.now();
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const child = spawnCdp(['start'], env);
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    out += d;
  });
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    err += d;
  });
  const exited = exitOf(child);
  let dead: Exit | null = null;
  void exited.then((e) => {
    dead = e;
  });

  const output = () => `--- stdout\n${out}\n--- stderr\n${err}`;
  const alive = () => {
    if (dead) throw new Error(`cdp start exited early (${JSON.stringify(dead)})\n${output()}`);
  };
  const left = () => Math.max(0, timeoutMs - (performance.now() - t0));

  let url: string | null = null;
  try {
    // Listening (its address in the log line), or, for ROLE=worker, its worker running.
    const started = await waitUntil(
      () => {
        alive();
        const logs = parseLogs(out);
        const listening = logs.find((l) => l.msg === 'cdp listening');
        if (listening) return { url: String(listening.address) };
        return logs.some((l) => l.msg === 'cdp worker running') && { url: null };
      },
      { what: 'cdp start to listen or run its worker', timeoutMs: left(), intervalMs: 25, detail: output },
    );
    url = started.url;
    if (url && opts.until !== 'port') {
      // The port answers at once; /ready says when the start is done (storage, migrations, app).
      const ready = `${url}/ready`;
      await waitUntil(
        async () => {
          alive();
          return fetch(ready).then(
            (r) => r.status === 200,
            () => false,
          );
        },
        { what: `${ready} to answer 200`, timeoutMs: left(), intervalMs: 25, detail: output },
      );
    }
  } catch (e) {
    child.kill('SIGKILL');
    throw e;
  }
  const startupMs = Math.round(performance.now() - t0);

  return {
    url,
    pid: child.pid!,
    startupMs,
    stdout: () => out,
    stderr: () => err,
    logs: () => parseLogs(out),
    exited,
    kill: (signal = 'SIGTERM') => {
      child.kill(signal);
    },
    async stop(stopTimeoutMs = 15_000) {
      if (dead) return dead;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), stopTimeoutMs);
      const e = await exited;
      clearTimeout(timer);
      return e;
    },
  };
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Runs one `cdp …` command to completion. */
export async function runCli(
  args: string[],
  env: Record<string, string>,
  timeoutMs = 60_000,
): Promise<CliResult> {
  const t0 = performance.now();
  const child = spawnCdp(args, env);
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    stdout += d;
  });
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const { code } = await exitOf(child);
  clearTimeout(timer);
  return { code, stdout, stderr, ms: Math.round(performance.now() - t0) };
}

/** A TCP port that was free a moment ago (for tests that must know the port in advance). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export interface HttpReply {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: test bodies are inspected field by field
  body: any;
}

/** One real HTTP request to a child service. */
export async function request(
  baseUrl: string,
  method: string,
  path: string,
  opts: { key?: string; token?: string; body?: unknown } = {},
): Promise<HttpReply> {
  const headers: Record<string, string> = {};
  if (opts.key) headers['x-api-key'] = opts.key;
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers,
    body: opts.body === undefined ? null : JSON.stringify(opts.body),
  });
  const text = await res.text();
  let body: unknown = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = text;
  }
  return { status: res.status, headers: res.headers, body };
}

/** Kills every child still running (afterAll of each file; the exit hook is the last resort). */
export function killAllChildren(): void {
  for (const c of running) c.kill('SIGKILL');
}
