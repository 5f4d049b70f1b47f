import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, expect } from 'vitest';
import { killAllChildren, request, type ServiceProcess, startService } from './child';
import { needs, onlyOn } from './skips';
import { waitUntil } from './wait';

/**
 * The embedded data directory is its owner's alone (docs/operations.md, "The data directory"): a
 * real `cdp start` under umask 000 leaves DATA_DIR 0700 and every file in it 0600, also the WAL
 * segments and relation files it writes while it runs; a start that finds wider modes (an older
 * version's directory) narrows them and says so in its log; and the user `nobody` cannot read the
 * WAL segment that holds a customer's attribute.
 */

const pglite = onlyOn(
  'pglite',
  'DATA_DIR is the embedded database’s; PostgreSQL keeps its own directory 0700',
);
const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
const hasRunuser = spawnSync('runuser', ['--help']).status === 0;

// The parent is open to everyone (as /var/lib is): only DATA_DIR's own modes keep other users out.
const parent = mkdtempSync(join(tmpdir(), 'cdp-modes-'));
chmodSync(parent, 0o755);
const dataDir = join(parent, 'data');
const adminKey = `cdp_sk_${randomBytes(32).toString('base64url')}`;
const env = {
  CDP_INITIAL_ADMIN_KEY: adminKey,
  LOG_LEVEL: 'info',
  HOST: '127.0.0.1',
  PORT: '0',
  DATA_DIR: dataDir,
};
/** Marks the customer attribute the WAL must hide from other users. */
const MARKER = `marker-${randomBytes(8).toString('hex')}`;

let svc: ServiceProcess | null = null;
afterEach(async () => {
  // A failed test must not leave its service holding DATA_DIR for the next one.
  await svc?.stop();
  svc = null;
});
afterAll(() => {
  killAllChildren();
  rmSync(parent, { recursive: true, force: true });
});

interface Entry {
  path: string;
  kind: 'file' | 'directory';
  mode: string;
}

/** Every file and directory under `dir` (itself included) with its permission bits in octal. */
function walk(dir: string): Entry[] {
  const out: Entry[] = [];
  const visit = (path: string) => {
    const st = lstatSync(path, { throwIfNoEntry: false });
    if (!st) return; // removed while walking (a temporary file of the running service)
    const mode = `0${(st.mode & 0o777).toString(8)}`;
    if (st.isDirectory()) {
      out.push({ path, kind: 'directory', mode });
      for (const name of readdirSync(path)) visit(join(path, name));
    } else out.push({ path, kind: 'file', mode });
  };
  visit(dir);
  return out;
}

/** The entries whose mode is not exactly what the service promises (0700 directories, 0600 files). */
const notPrivate = (entries: Entry[]) =>
  entries.filter((e) => e.mode !== (e.kind === 'directory' ? '0700' : '0600'));

/** The umask a running process has, as Linux reports it. */
const umaskOf = (pid: number) => /^Umask:\s*(\d+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];

/** Starts `cdp start` with this umask (a child inherits it at spawn, which startService does at once). */
async function startWithUmask(umask: number): Promise<ServiceProcess> {
  const previous = process.umask(umask);
  let started: Promise<ServiceProcess>;
  try {
    started = startService(env, { timeoutMs: 120_000 });
  } finally {
    process.umask(previous);
  }
  return started;
}

/** WAL segments and which of them hold `needle`, read as the service's own user. */
function walSegmentsHolding(needle: string): string[] {
  const wal = join(dataDir, 'pg_wal');
  return readdirSync(wal)
    .filter((n) => /^[0-9A-F]{24}$/.test(n))
    .filter((n) => readFileSync(join(wal, n)).includes(needle))
    .map((n) => join(wal, n));
}

pglite.describe('the embedded data directory', () => {
  pglite.it(
    'is private from a first start under umask 000, and stays so for the files it writes while it runs',
    async () => {
      svc = await startWithUmask(0);
      expect(umaskOf(svc.pid)).toBe('0000');
      const atStart = walk(dataDir);
      expect(atStart.length).toBeGreaterThan(900);
      expect(notPrivate(atStart)).toEqual([]);
      const before = new Set(atStart.map((e) => e.path));

      // A customer's attribute, and enough incompressible payload (≈ 24 MB) that PostgreSQL fills its
      // WAL segment and starts new ones while the service runs.
      const ident = await request(svc.url!, 'POST', '/api/ingest', {
        key: adminKey,
        body: {
          event_type: 'identify',
          event_name: 'Signed Up',
          identity: 'wal-reader@example.com',
          payload: { secret_note: MARKER },
        },
      });
      expect(ident.status).toBe(202);
      for (let b = 0; b < 8; b++) {
        const batch = Array.from({ length: 100 }, (_, i) => ({
          event_type: 'track',
          event_name: 'Bulk',
          identity: `bulk-${b}-${i}@example.com`,
          payload: { blob: randomBytes(15_000).toString('hex') },
        }));
        const res = await request(svc.url!, 'POST', '/tenant/ingest/batch', { key: adminKey, body: batch });
        expect(res.status).toBe(202);
      }
      await waitUntil(
        async () =>
          (
            await request(svc!.url!, 'GET', '/tenant/profiles?email=wal-reader@example.com', {
              key: adminKey,
            })
          ).body?.data?.length === 1,
        { what: 'the identify event to be processed', timeoutMs: 60_000, intervalMs: 100 },
      );

      const running = walk(dataDir);
      const created = running.filter((e) => !before.has(e.path));
      // New WAL segments and new relation files were written while it ran, and are private too.
      expect(created.filter((e) => e.path.includes(`${join(dataDir, 'pg_wal')}/0`)).length).toBeGreaterThan(
        0,
      );
      expect(created.filter((e) => e.path.includes(join(dataDir, 'base'))).length).toBeGreaterThan(0);
      expect(notPrivate(running)).toEqual([]);

      expect((await svc.stop()).code).toBe(0);
      svc = null;
      expect(notPrivate(walk(dataDir))).toEqual([]);
    },
    180_000,
  );

  needs('root, to act as the user nobody', isRoot && hasRunuser)
    .and(pglite)
    .it('keeps the WAL segment holding a customer’s attribute from the user nobody', () => {
      const segments = walSegmentsHolding(MARKER);
      // The service's own user finds the attribute there: what nobody must not read.
      expect(segments.length).toBeGreaterThan(0);
      for (const segment of segments) {
        const asNobody = spawnSync('runuser', ['-u', 'nobody', '--', 'cat', segment], { encoding: 'buffer' });
        expect(asNobody.status).not.toBe(0);
        expect(asNobody.stderr.toString()).toMatch(/Permission denied/);
        expect(asNobody.stdout.includes(MARKER)).toBe(false);
      }
    });

  pglite.it(
    'narrows what a start finds wider (an older version’s directory), and says so in its log',
    async () => {
      // What older versions left: directories 0755, the files PGlite copied from initdb 0666.
      const entries = walk(dataDir);
      const dirs = entries.filter((e) => e.kind === 'directory');
      const files = entries.filter((e) => e.kind === 'file');
      for (const d of dirs) chmodSync(d.path, 0o755);
      for (const f of files) chmodSync(f.path, 0o666);

      svc = await startWithUmask(0o022);
      const said = svc.logs().find((l) => l.files !== undefined && l.directories !== undefined);
      expect(said).toMatchObject({
        level: 40,
        files: files.length,
        directories: dirs.length,
        modes_found: { '0666': files.length, '0755': dirs.length },
      });
      expect(String(said!.msg)).toContain(
        `made ${files.length} files 0600 and ${dirs.length} directories 0700`,
      );
      expect(notPrivate(walk(dataDir))).toEqual([]);
      expect((await svc.stop()).code).toBe(0);
      svc = null;

      // A start that finds everything private says nothing about it.
      svc = await startWithUmask(0o022);
      expect(svc.logs().some((l) => l.modes_found !== undefined)).toBe(false);
      expect((await svc.stop()).code).toBe(0);
      svc = null;
    },
    180_000,
  );
});
