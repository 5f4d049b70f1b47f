import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { waitUntil } from '../../../test/wait';
import { openPglite } from './pglite-open';
import { pendingRecovery, replayedBytes } from './pglite-recovery';
import { createPgliteSession } from './pglite-session';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const MB = 1024 * 1024;
const dirs: string[] = [];
const freshDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'cdp-recovery-'));
  dirs.push(d);
  return d;
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const walSinceCheckpoint = async (q: { query: (sql: string) => Promise<{ rows: unknown[] }> }) =>
  Number(
    (
      (await q.query('SELECT pg_current_wal_lsn() - redo_lsn AS n FROM pg_control_checkpoint()')).rows[0] as {
        n: number;
      }
    ).n,
  );

/** Writes about `mb` MB into a fresh cluster in `dir` and dies with SIGKILL before closing it. */
function crashAfterWriting(dir: string, mb: number): void {
  const script = `
    import { PGlite } from '@electric-sql/pglite';
    const pg = await PGlite.create({ dataDir: ${JSON.stringify(dir)} });
    await pg.exec('CREATE TABLE filler (id int, pad text)');
    await pg.exec("INSERT INTO filler SELECT g, repeat('x', 1000) FROM generate_series(1, ${mb * 900}) g");
    process.kill(process.pid, 'SIGKILL');
  `;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  expect(r.signal, r.stderr).toBe('SIGKILL');
}

describe('an embedded database checkpoints as it writes', () => {
  it('checkpoints once the WAL written since the last checkpoint passes the threshold', async () => {
    // PGlite is a single-user PostgreSQL: it never checkpoints by itself, so without this every
    // byte of WAL since the last clean stop would be replayed after a crash.
    const session = createPgliteSession(await openPglite(freshDir()), {
      checkpointWalBytes: 2 * MB,
      checkpointCheckMs: 20,
    });
    try {
      await session.exec('CREATE TABLE filler (id int, pad text)');
      await session.exec("INSERT INTO filler SELECT g, repeat('x', 1000) FROM generate_series(1, 6000) g");
      // Fails, naming what it waited for, if no checkpoint brings it under 2 MB in 10 s.
      await waitUntil(async () => (await walSinceCheckpoint(session)) < 2 * MB, {
        what: 'a checkpoint to leave under 2 MB of WAL to replay',
        timeoutMs: 10_000,
      });
    } finally {
      await session.close();
    }
  });
});

describe('what a crash leaves an embedded database to replay', () => {
  it('is nothing after a clean stop, and the WAL since the last checkpoint after a SIGKILL', async () => {
    const clean = freshDir();
    await (await openPglite(clean)).close();
    expect(pendingRecovery(clean)).toBeNull();

    const crashed = freshDir();
    crashAfterWriting(crashed, 8);
    const pending = pendingRecovery(crashed)!;
    expect(pending).not.toBeNull();
    // About 8 MB of rows (and their WAL records) were written after the checkpoint of the creation.
    expect(pending.walBytes).toBeGreaterThan(8 * MB);
    expect(pending.walBytes).toBeLessThan(8 * MB + 4 * pending.segmentBytes);

    // Opening replays it, and the end of the replay is a checkpoint: nothing is left for next time.
    const pg = await openPglite(crashed);
    expect(await pg.query('SELECT count(*)::int AS n FROM filler')).toMatchObject({ rows: [{ n: 8 * 900 }] });
    await pg.close();
    expect(pendingRecovery(crashed)).toBeNull();
  });

  it('tells how far the replay has got from the WAL segment this process has open', () => {
    const crashed = freshDir();
    crashAfterWriting(crashed, 40);
    const pending = pendingRecovery(crashed)!;
    expect(replayedBytes(crashed, pending)).toBeNull();

    const seg = BigInt(pending.segmentBytes);
    const next = pending.redo / seg + 1n;
    const name = readdirSync(join(crashed, 'pg_wal')).find(
      (n) => /^[0-9A-F]{24}$/.test(n) && BigInt(`0x${n.slice(16)}`) === next,
    )!;
    const fd = openSync(join(crashed, 'pg_wal', name), 'r');
    try {
      expect(replayedBytes(crashed, pending)).toBe(Number(next * seg - pending.redo));
    } finally {
      closeSync(fd);
    }
  });
});
