import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { migrate } from '../src/platform/db/migrate';
import { createPgliteDb } from '../src/platform/db/pglite';
import type { Db } from '../src/platform/db/port';
import { createPostgresDb } from '../src/platform/db/postgres';
import { enqueue, type Job } from '../src/platform/jobs';
import { ROOT } from './child';
import { dropSchema, freshSchemaName } from './harness';
import { onlyOn } from './skips';
import { waitUntil } from './wait';

// PGlite opens its data directory (≈ 3 s, far more on a busy machine) several times per test.
vi.setConfig({ testTimeout: process.env.DATABASE_URL ? 120_000 : 300_000, hookTimeout: 60_000 });

/**
 * The job runner across real processes (test/jobs-worker.ts): two workers on one PostgreSQL
 * database share N jobs, each run exactly once; a worker told to stop (SIGTERM) mid-job either
 * finishes the job or gives it back, loses nothing and exits 0. PGlite is single-process, so there
 * the parent and one child take turns on a data directory.
 */
const PG_URL = process.env.DATABASE_URL;
const children = new Set<ChildProcess>();
const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  for (const f of cleanups) await f();
});

/** Where the processes meet: a PostgreSQL schema, or a PGlite directory (opened by one at a time). */
async function setup(): Promise<{ env: Record<string, string>; open: () => Promise<Db> }> {
  let env: Record<string, string>;
  let open: () => Promise<Db>;
  if (PG_URL) {
    const schema = freshSchemaName();
    env = { DATABASE_URL: PG_URL, DATABASE_SCHEMA: schema };
    open = () => createPostgresDb({ url: PG_URL, schema });
    cleanups.push(() => dropSchema(PG_URL, schema));
  } else {
    const dir = mkdtempSync(join(tmpdir(), 'cdp-jobs-'));
    env = { DATA_DIR: dir };
    open = () => createPgliteDb({ dataDir: dir });
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  }
  const db = await open();
  await migrate(db);
  await db.exec(`CREATE TABLE job_runs (job_id text NOT NULL, pid int NOT NULL, attempt int NOT NULL,
    started_at timestamptz NOT NULL DEFAULT now(), finished_at timestamptz)`);
  await db.close();
  return { env, open };
}

interface Worker {
  child: ChildProcess;
  out: () => string;
  exited: Promise<number | null>;
}

async function startWorker(env: Record<string, string>): Promise<Worker> {
  const base: Record<string, string> = {};
  for (const k of ['PATH', 'HOME', 'TMPDIR', 'LANG']) if (process.env[k]) base[k] = process.env[k]!;
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'test', 'jobs-worker.ts')], {
    cwd: ROOT,
    env: { ...base, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    out += d;
  });
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    out += d;
  });
  const exited = new Promise<number | null>((r) => child.once('close', (code) => r(code)));
  await until(
    'the worker to start',
    () => out.includes('jobs-worker ready'),
    60_000,
    () => out,
  );
  return { child, out: () => out, exited };
}

const until = (what: string, check: () => boolean | Promise<boolean>, ms: number, detail: () => string) =>
  waitUntil(check, { what, timeoutMs: ms, intervalMs: 25, detail });

/** The jobs of the workers' queue (a migration may queue jobs of its own: 0028 does). */
const jobsOf = async (db: Db) =>
  (await db.query<Job>("SELECT * FROM jobs WHERE queue = 'work' ORDER BY id")).rows;

onlyOn('postgres', 'PGlite is one process').describe(
  'two job-runner processes on one PostgreSQL database',
  () => {
    it('run each of N jobs exactly once, never one job twice at the same time', async () => {
      const { env, open } = await setup();
      const workers = await Promise.all([0, 1].map(() => startWorker({ ...env, JOB_MS: '5' })));
      const db = await open();
      const N = 300;
      for (let i = 0; i < N; i++) await enqueue(db, { queue: 'work', payload: { i } });
      await until(
        'every job to succeed',
        async () =>
          (await db.query("SELECT 1 FROM jobs WHERE queue = 'work' AND state <> 'succeeded'")).rowCount === 0,
        60_000,
        () => workers.map((w) => w.out().slice(-2000)).join('\n--\n'),
      );
      const runs = await db.query<{ job_id: string; n: number; pids: number }>(
        `SELECT job_id, count(*)::int AS n, count(DISTINCT pid)::int AS pids FROM job_runs GROUP BY job_id`,
      );
      expect(runs.rows).toHaveLength(N);
      expect(runs.rows.filter((r) => r.n !== 1)).toEqual([]);
      const perPid = await db.query<{ pid: number }>('SELECT DISTINCT pid FROM job_runs');
      expect(perPid.rows.map((r) => r.pid).sort()).toEqual(workers.map((w) => w.child.pid).sort());
      for (const w of workers) w.child.kill('SIGTERM');
      expect(await Promise.all(workers.map((w) => w.exited))).toEqual([0, 0]);
      await db.close();
    });
  },
);

describe('a job-runner process told to stop (SIGTERM) in the middle of a job', () => {
  it('finishes the job when it can within the drain deadline, then exits 0', async () => {
    const { env, open } = await setup();
    let db = await open();
    const { id } = await enqueue(db, { queue: 'work' });
    if (!PG_URL) await db.close(); // PGlite: one process at a time
    const w = await startWorker({ ...env, JOB_MS: '1500', DRAIN_MS: '20000' });
    await until('the job to start', () => w.out().includes(`started ${id}`), 30_000, w.out);
    w.child.kill('SIGTERM');
    expect(await w.exited).toBe(0);
    expect(w.out()).toContain('stopped {"finished":1,"released":0}');
    if (!PG_URL) db = await open();
    expect((await jobsOf(db)).map((j) => [j.id, j.state, j.attempts])).toEqual([[id, 'succeeded', 1]]);
    await db.close();
  });

  it('gives the job back when the drain deadline passes, exits 0, and the next process runs it', async () => {
    const { env, open } = await setup();
    let db = await open();
    const { id } = await enqueue(db, { queue: 'work' });
    if (!PG_URL) await db.close();
    const w = await startWorker({ ...env, JOB_MS: '60000', DRAIN_MS: '300' });
    await until('the job to start', () => w.out().includes(`started ${id}`), 30_000, w.out);
    w.child.kill('SIGTERM');
    expect(await w.exited).toBe(0);
    expect(w.out()).toContain('stopped {"finished":0,"released":1}');
    if (!PG_URL) db = await open();
    expect((await jobsOf(db)).map((j) => [j.id, j.state, j.attempts])).toEqual([[id, 'queued', 0]]);
    if (!PG_URL) await db.close();

    const next = await startWorker({ ...env, JOB_MS: '10' });
    await until(
      'the next process to start the job',
      () => next.out().includes(`started ${id}`),
      30_000,
      next.out,
    );
    // Stopped at once: its drain lets the 10 ms job finish and records the result before it exits.
    next.child.kill('SIGTERM');
    expect(await next.exited).toBe(0);
    if (!PG_URL) db = await open();
    expect((await jobsOf(db)).map((j) => [j.id, j.state, j.attempts])).toEqual([[id, 'succeeded', 1]]);
    await db.close();
  });
});
