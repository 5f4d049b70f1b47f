import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../src/config';
import { openDb } from '../src/platform/db';
import { type Exit, parseLogs, ROOT, serviceEnv } from './child';
import { dropSchema, ENGINE } from './harness';
import { createIngestKeys, startIngestLoad, unkeptAcks } from './ingest-load';
import { letTimePass, waitUntil as waitFor } from './wait';

// Each test starts the whole service through npm (seconds on a busy 2-core machine).
vi.setConfig({ testTimeout: 180_000, hookTimeout: 60_000 });

/**
 * The README says `npm start`, so a process manager (systemd, Docker, a supervisor) holds the PID of
 * npm's own process, not of node: that is where SIGTERM and SIGINT arrive. These tests send them to
 * exactly that PID.
 */
const schemas: string[] = [];
const dataDirs: string[] = [];
const nodePids: number[] = [];
const npms: ChildProcess[] = [];

afterAll(async () => {
  for (const p of npms) p.kill('SIGKILL');
  // A service orphaned by a failed test must not outlive the run.
  for (const pid of nodePids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  for (const s of schemas) await dropSchema(process.env.DATABASE_URL!, s);
  for (const d of dataDirs) rmSync(d, { recursive: true, force: true });
});

interface NpmStart {
  proc: ChildProcess;
  logs(): Array<Record<string, unknown>>;
  output(): string;
  exited: Promise<Exit>;
}

/** `npm start` in the project directory, with only `env` (and what npm and node need) set. */
function npmStart(env: Record<string, string>): NpmStart {
  const base: Record<string, string> = {};
  for (const k of ['PATH', 'HOME', 'TMPDIR', 'LANG']) if (process.env[k]) base[k] = process.env[k]!;
  const proc = spawn('npm', ['start'], {
    cwd: ROOT,
    env: { ...base, npm_config_update_notifier: 'false', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  npms.push(proc);
  let out = '';
  proc.stdout!.setEncoding('utf8').on('data', (d: string) => {
    out += d;
  });
  proc.stderr!.setEncoding('utf8').on('data', (d: string) => {
    out += d;
  });
  const exited = new Promise<Exit>((resolve) =>
    proc.once('close', (code, signal) => resolve({ code, signal })),
  );
  return { proc, logs: () => parseLogs(out), output: () => out, exited };
}

async function waitUntil(what: string, cond: () => boolean, ms: number, npm: NpmStart): Promise<void> {
  await waitFor(cond, { what, timeoutMs: ms, intervalMs: 50, detail: npm.output });
}

const running = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe(`npm start, the command the README gives (${ENGINE})`, () => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`drains and exits 0 when ${signal} goes to npm's own PID, and keeps every acknowledged event`, async () => {
      const dataDir = ENGINE === 'pglite' ? mkdtempSync(join(tmpdir(), 'cdp-npm-start-')) : null;
      if (dataDir) dataDirs.push(dataDir);
      const env = serviceEnv(dataDir ? { DATA_DIR: dataDir } : {});
      if (env.DATABASE_SCHEMA) schemas.push(env.DATABASE_SCHEMA);

      const npm = npmStart(env);
      await waitUntil('cdp ready', () => npm.logs().some((l) => l.msg === 'cdp ready'), 120_000, npm);
      const listening = npm.logs().find((l) => l.msg === 'cdp ready')!;
      const url = String(listening.address);
      const nodePid = Number(listening.pid);
      nodePids.push(nodePid);
      // The process a manager holds is npm; the service is another process under it.
      expect(nodePid).not.toBe(npm.proc.pid);

      const keys = await createIngestKeys(url, env.CDP_INITIAL_ADMIN_KEY!, 4);
      const load = startIngestLoad(url, { keys });
      await waitUntil('100 acknowledged events', () => load.acks.length >= 100, 60_000, npm);
      process.kill(npm.proc.pid!, signal);
      const exit = await Promise.race([
        npm.exited,
        letTimePass(30_000, 'the drain has a deadline; past it the exit is what failed').then(() => ({
          code: null,
          signal: null,
          timedOut: true,
        })),
      ]);
      await load.stop();

      expect(exit, npm.output()).toEqual({ code: 0, signal: null });
      expect(running(nodePid)).toBe(false);
      expect(npm.logs()).toContainEqual(expect.objectContaining({ msg: 'draining', signal }));
      expect(npm.logs().map((l) => l.msg)).toContain('stopped');

      // On the same data afterwards: every event the service acknowledged is there exactly once.
      const db = await openDb(loadConfig(env));
      try {
        expect(await unkeptAcks(db, load.acks)).toEqual({ missing: [], duplicated: [], wrongMessage: [] });
      } finally {
        await db.close();
      }
    });
  }
});
