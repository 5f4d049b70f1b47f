import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { migrate } from '../src/platform/db/migrate';
import { createPgliteDb } from '../src/platform/db/pglite';
import type { Db } from '../src/platform/db/port';
import { createPostgresDb } from '../src/platform/db/postgres';
import { enqueue } from '../src/platform/jobs';
import { killAllChildren, runCli } from './child';
import { dropSchema, testEnv } from './harness';

vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

/** `cdp jobs`: the job runner's visible state, as an operator reads it, on a database of its own. */
const env = testEnv({ LOG_LEVEL: 'warn' });
let dir: string | null = null;
const ids: Record<string, string> = {};

async function open(): Promise<Db> {
  if (env.DATABASE_URL) return createPostgresDb({ url: env.DATABASE_URL, schema: env.DATABASE_SCHEMA! });
  return createPgliteDb({ dataDir: env.DATA_DIR!, inProcess: true });
}

beforeAll(async () => {
  if (!env.DATABASE_URL) {
    dir = mkdtempSync(join(tmpdir(), 'cdp-jobs-cli-'));
    env.DATA_DIR = join(dir, 'data');
  }
  const db = await open();
  try {
    await migrate(db);
    ids.a = (await enqueue(db, { queue: 'mail', payload: { to: 'a' } })).id;
    ids.b = (await enqueue(db, { queue: 'mail', payload: { to: 'b' } })).id;
    ids.c = (await enqueue(db, { queue: 'other' })).id;
    await db.query(`UPDATE jobs SET state = 'dead', attempts = 5, last_error = 'Error: 500' WHERE id = $1`, [
      ids.b,
    ]);
  } finally {
    await db.close();
  }
});

afterAll(async () => {
  killAllChildren();
  if (dir) rmSync(dir, { recursive: true, force: true });
  if (env.DATABASE_URL) await dropSchema(env.DATABASE_URL, env.DATABASE_SCHEMA!);
});

describe('cdp jobs', () => {
  it('prints the jobs of a queue with counts per state, as JSON', async () => {
    const res = await runCli(['jobs', '--queue', 'mail'], env);
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    const out = JSON.parse(res.stdout);
    expect(out.counts).toEqual({ mail: { queued: 1, running: 0, succeeded: 0, dead: 1 } });
    expect(out.jobs.map((j: { id: string }) => j.id).sort()).toEqual([ids.a, ids.b].sort());
    expect(out.next).toBeNull();
  });

  it('filters by state, showing a dead letter with its last error', async () => {
    const res = await runCli(['jobs', '--state', 'dead'], env);
    expect(res.code).toBe(0);
    const out = JSON.parse(res.stdout);
    expect(out.jobs).toEqual([
      expect.objectContaining({
        id: ids.b,
        queue: 'mail',
        state: 'dead',
        attempts: 5,
        last_error: 'Error: 500',
      }),
    ]);
    // The counts cover every queue (migration 0028 queues a repair job of its own).
    expect(Object.keys(out.counts)).toEqual(expect.arrayContaining(['mail', 'other']));
  });

  it('refuses an unknown state with a one-line usage error (exit 2)', async () => {
    const res = await runCli(['jobs', '--state', 'sleeping'], env);
    expect(res.code).toBe(2);
    expect(res.stderr.trim()).toBe('cdp: unknown job state "sleeping"; use queued, running, succeeded, dead');
    expect(res.stdout).toBe('');
  });
});
