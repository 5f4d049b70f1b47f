import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

/**
 * A private PostgreSQL cluster for fault tests: its own data directory under the OS temp dir, its
 * own port, so a test may stop it the hard way (`pg_ctl stop -m immediate`, a server crash) without
 * touching the shared test server. PostgreSQL refuses to run as root, so under root (CI) initdb and
 * pg_ctl run as an unprivileged user: `postgres` when it exists, else `nobody`.
 */
const run = promisify(execFile);

/** The folder of PostgreSQL's server binaries (initdb, pg_ctl), or null when they are absent. */
export function findPgBinDir(): string | null {
  const candidates: string[] = [];
  try {
    candidates.push(execFileSync('pg_config', ['--bindir'], { encoding: 'utf8', stdio: 'pipe' }).trim());
  } catch {
    // No pg_config on PATH: look where Debian and most distributions put them.
  }
  candidates.push('/usr/lib/postgresql/15/bin', '/usr/lib/postgresql/16/bin', '/usr/lib/postgresql/17/bin');
  return candidates.find((d) => existsSync(join(d, 'initdb')) && existsSync(join(d, 'pg_ctl'))) ?? null;
}

function uidOf(user: string): { uid: number; gid: number } | null {
  try {
    const uid = Number(execFileSync('id', ['-u', user], { encoding: 'utf8', stdio: 'pipe' }).trim());
    const gid = Number(execFileSync('id', ['-g', user], { encoding: 'utf8', stdio: 'pipe' }).trim());
    return Number.isInteger(uid) && Number.isInteger(gid) ? { uid, gid } : null;
  } catch {
    return null;
  }
}

/** A port in `from..to` nothing listens on at this moment. */
export async function freePortIn(from: number, to: number): Promise<number> {
  for (let port = from; port <= to; port++) {
    const free = await new Promise<boolean>((resolve) => {
      const srv = createServer();
      srv.once('error', () => resolve(false));
      srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error(`no free port in ${from}-${to}`);
}

export interface PgCluster {
  port: number;
  dir: string;
  /** `postgres://postgres@127.0.0.1:<port>/postgres` (trust authentication). */
  url: string;
  start(): Promise<void>;
  /** `pg_ctl stop -m immediate`: every backend killed at once, as in a server crash. */
  stopImmediate(): Promise<void>;
  /**
   * SIGSTOP to the server and every backend: connections stay open and accept bytes, nothing
   * answers (a hung server or a network partition, as a client sees it). `thaw` resumes them.
   */
  freeze(): void;
  thaw(): void;
  /** Stops the server if it runs and removes the data directory; never throws. */
  destroy(): Promise<void>;
  log(): string;
}

export async function createPgCluster(binDir: string, port: number): Promise<PgCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'cdp-pgcluster-'));
  const data = join(dir, 'data');
  const logFile = join(dir, 'server.log');
  const asRoot = process.getuid?.() === 0;
  const owner = asRoot ? (uidOf('postgres') ?? uidOf('nobody')) : null;
  if (asRoot && !owner) throw new Error('running as root, but neither user postgres nor nobody exists');
  if (owner) execFileSync('chown', [`${owner.uid}:${owner.gid}`, dir]);

  const pg = (tool: string, args: string[]) => {
    const bin = join(binDir, tool);
    return owner
      ? run('setpriv', [`--reuid=${owner.uid}`, `--regid=${owner.gid}`, '--clear-groups', bin, ...args], {
          timeout: 30_000,
        })
      : run(bin, args, { timeout: 30_000 });
  };
  let running = false;
  let frozen: number[] = [];
  const serverPids = (): number[] => {
    const postmaster = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    const children = execFileSync('ps', ['-o', 'pid=', '--ppid', String(postmaster)], { encoding: 'utf8' })
      .split('\n')
      .map((l) => Number(l.trim()))
      .filter((pid) => pid > 0);
    return [postmaster, ...children];
  };

  const cluster: PgCluster = {
    port,
    dir,
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    async start() {
      const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100`;
      await pg('pg_ctl', ['-D', data, '-l', logFile, '-o', opts, '-w', '-t', '30', 'start']);
      running = true;
    },
    async stopImmediate() {
      await pg('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      running = false;
    },
    freeze() {
      frozen = serverPids();
      for (const pid of frozen) process.kill(pid, 'SIGSTOP');
    },
    thaw() {
      for (const pid of frozen.splice(0)) {
        try {
          process.kill(pid, 'SIGCONT');
        } catch {
          // Already gone.
        }
      }
    },
    async destroy() {
      cluster.thaw();
      if (running) await cluster.stopImmediate().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
    log() {
      try {
        return execFileSync('tail', ['-n', '50', logFile], { encoding: 'utf8' });
      } catch {
        return '';
      }
    },
  };
  try {
    await pg('initdb', [
      '-D',
      data,
      '-U',
      'postgres',
      '--auth=trust',
      '-E',
      'UTF8',
      '--no-sync',
      '--no-instructions',
    ]);
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return cluster;
}
