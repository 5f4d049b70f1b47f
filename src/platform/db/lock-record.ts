import { randomBytes } from 'node:crypto';
import { readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';

// The lock file itself (data-dir-lock.ts takes and releases it): its record, reading it, writing a
// new one, and the words a refusal names its holder with.

export const LOCK_FILE = 'cdp.lock';

/** What `cdp.lock` says about its holder. */
export interface LockRecord {
  pid: number;
  host: string;
  /**
   * The holder's boot id and start time (Linux: /proc), so a PID the system has since given to
   * another process is not taken for the holder. Null where the system does not tell.
   */
  process_start: string | null;
  /** The command that holds it, for the message a second opener reads (`cdp start`). */
  command: string;
  since: string;
  /** Where the holder serves HTTP once it listens (`cdp start`); null before, and for other holders. */
  url: string | null;
  /**
   * The credential the CLI on this machine uses to reach the holder's HTTP API (auth `local`). The
   * file is readable by its owner only: whoever can read it can read the database files anyway.
   */
  token: string;
}

/** Another process holds DATA_DIR (or, `holder` null, its lock cannot be read or taken over). */
export class DataDirInUseError extends Error {
  constructor(
    readonly dir: string,
    readonly holder: LockRecord | null,
    message: string,
  ) {
    super(message);
    this.name = 'DataDirInUseError';
  }
}

export const lockPath = (dir: string) => join(dir, LOCK_FILE);

export function errCode(err: unknown): string | undefined {
  return (err as { code?: string }).code;
}

export function parseRecord(raw: string): LockRecord | null {
  try {
    const r = JSON.parse(raw) as LockRecord;
    return Number.isInteger(r.pid) && typeof r.host === 'string' && typeof r.token === 'string' ? r : null;
  } catch {
    return null;
  }
}

/** The raw text of `cdp.lock`, or null when there is none. */
export function readRaw(dir: string): string | null {
  try {
    return readFileSync(lockPath(dir), 'utf8');
  } catch (err) {
    if (errCode(err) === 'ENOENT') return null;
    if (errCode(err) === 'EACCES') {
      throw new DataDirInUseError(
        dir,
        null,
        `DATA_DIR ${dir} is locked by another user's process (${lockPath(dir)} cannot be read)`,
      );
    }
    throw err;
  }
}

/** `cdp start` (PID 123, since …, serving http://…): the holder as a message names it. */
export function describeHolder(r: LockRecord): string {
  const where = r.host === hostname() ? '' : ` on host ${r.host}`;
  const serving = r.url ? `, serving ${r.url}` : '';
  return `\`${r.command}\` (PID ${r.pid}${where}, since ${r.since}${serving})`;
}

/** For a holder on another host, which cannot be checked from here: how to clear its lock. */
export function elsewhereHint(dataDir: string, r: LockRecord): string {
  return r.host === hostname()
    ? ''
    : `. Its process cannot be seen from this host: if it no longer runs, remove ${lockPath(dataDir)}`;
}

/** Writes `record` to a new private file beside the lock; returns its path. */
export function writeTemp(dir: string, record: LockRecord): string {
  const tmp = join(dir, `${LOCK_FILE}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  writeFileSync(tmp, `${JSON.stringify(record, null, 2)}\n`, { flag: 'wx', mode: 0o600 });
  return tmp;
}

export function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // Already gone.
  }
}

export const inUse = (dataDir: string, current: LockRecord) =>
  new DataDirInUseError(
    dataDir,
    current,
    `DATA_DIR ${dataDir} is in use by ${describeHolder(current)}; stop it first, or use another ` +
      'DATA_DIR: the embedded database serves one process at a time (PostgreSQL, via DATABASE_URL, ' +
      `serves several)${elsewhereHint(dataDir, current)}`,
  );
