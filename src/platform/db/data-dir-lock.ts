import { createHash, randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, realpathSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { livenessOf, processStart } from './lock-liveness';
import {
  DataDirInUseError,
  errCode,
  inUse,
  LOCK_FILE,
  type LockRecord,
  lockPath,
  parseRecord,
  readRaw,
  unlinkQuietly,
  writeTemp,
} from './lock-record';

/**
 * The embedded database belongs to one process: PGlite takes no lock of its own, and two processes
 * writing one data directory corrupt it. So every process that opens DATA_DIR first holds this lock,
 * a file in the directory naming its holder (like PostgreSQL's postmaster.pid), taken before PGlite
 * touches a file and removed on a clean close or exit.
 *
 * Taking it: the record is written whole to a private temporary file, then hard-linked to
 * `cdp.lock`; link() fails if the name exists, so exactly one process wins and nobody ever reads a
 * half-written record. A record whose holder is gone (killed with SIGKILL, or the machine restarted)
 * is stale and taken over. Two openers may find the same stale record at once, and a plain "remove
 * it, then create mine" would let the slower one remove the faster one's fresh lock (both would then
 * hold it). So a takeover first creates `cdp.lock.<digest of the stale record>.takeover` exclusively:
 * only one opener gets it, and that one removes `cdp.lock` only if it still holds that very record.
 * docs/decisions.md says why this is written here rather than taken from a library.
 */

export { processStart } from './lock-liveness';
export { DataDirInUseError, describeHolder, elsewhereHint, LOCK_FILE, type LockRecord } from './lock-record';

export interface DataDirLock {
  readonly dir: string;
  readonly record: Readonly<LockRecord>;
  /** Records where this process serves HTTP, so CLI commands can go through it. */
  advertise(url: string): void;
  /** Removes the lock (idempotent). */
  release(): void;
}

/** Locks held by this process, by the real path of their directory. */
const held = new Map<string, DataDirLock>();
let exitHook = false;

const digest = (raw: string) => createHash('sha256').update(raw).digest('hex').slice(0, 16);

/**
 * The live holder of DATA_DIR, or null when nobody holds it (no lock, or a stale one). Reads only:
 * nothing is created, taken over or removed.
 */
export function readLockHolder(dataDir: string): LockRecord | null {
  const raw = readRaw(dataDir);
  if (raw === null) return null;
  const record = parseRecord(raw);
  if (!record) return null;
  let real: string;
  try {
    real = realpathSync(dataDir);
  } catch {
    return null;
  }
  return livenessOf(record, held.get(real)?.record.token) === 'dead' ? null : record;
}

/** The lock this process holds on DATA_DIR, if any. */
export function heldLock(dataDir: string): DataDirLock | null {
  try {
    return held.get(realpathSync(dataDir)) ?? null;
  } catch {
    return null;
  }
}

function commandLine(): string {
  const program = basename(process.argv[1] ?? 'node').replace(/\.[cm]?[jt]s$/, '');
  return [program, ...process.argv.slice(2)].join(' ').slice(0, 200);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Refuses at once, with the same error lockDataDir would give, when a live process holds DATA_DIR:
 * for `cdp start`, which binds its port before it opens the database and must not show a second
 * service listening when it can only be refused. Reads only; the lock itself is still taken, and
 * raced for, by lockDataDir.
 */
export function assertDataDirFree(dataDir: string): void {
  const holder = readLockHolder(dataDir);
  if (holder) throw inUse(dataDir, holder);
}

/**
 * Takes the lock on DATA_DIR (creating the directory, mode 0700, if need be, and nothing else), or throws
 * DataDirInUseError naming the live holder. Stale locks are taken over.
 */
export async function lockDataDir(dataDir: string): Promise<DataDirLock> {
  // The directory is its owner's alone from its first instant, whatever the umask (a parent it needs
  // is created with the usual modes). An existing one is narrowed by the opener (data-dir-modes.ts).
  mkdirSync(dirname(dataDir), { recursive: true });
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const real = realpathSync(dataDir);
  const record: LockRecord = {
    pid: process.pid,
    host: hostname(),
    process_start: processStart(process.pid),
    command: commandLine(),
    since: new Date().toISOString(),
    url: null,
    token: randomBytes(32).toString('base64url'),
  };
  const tmp = writeTemp(dataDir, record);
  try {
    for (let attempt = 0; attempt < 50; attempt++) {
      try {
        linkSync(tmp, lockPath(dataDir));
        return hold(dataDir, real, record);
      } catch (err) {
        if (errCode(err) !== 'EEXIST') throw err;
      }
      const raw = readRaw(dataDir);
      if (raw === null) continue; // released meanwhile
      const current = parseRecord(raw);
      // A record that cannot be read was not written by a live holder (they are written whole).
      if (current && livenessOf(current, held.get(real)?.record.token) !== 'dead') {
        throw inUse(dataDir, current);
      }
      if (!(await takeOver(dataDir, raw))) await sleep(20 + Math.random() * 30);
    }
    throw new DataDirInUseError(
      dataDir,
      null,
      `could not take over the stale lock ${lockPath(dataDir)}: another process kept taking it. If no cdp ` +
        `process uses ${dataDir}, remove ${lockPath(dataDir)} and any ${LOCK_FILE}.*.takeover beside it`,
    );
  } finally {
    unlinkQuietly(tmp);
  }
}

/**
 * Removes the stale record `raw` if this opener is the one allowed to: whoever creates its takeover
 * file. Returns false when another opener is taking it over right now.
 */
async function takeOver(dir: string, raw: string): Promise<boolean> {
  const marker = join(dir, `${LOCK_FILE}.${digest(raw)}.takeover`);
  try {
    writeFileSync(marker, `${process.pid}\n`, { flag: 'wx', mode: 0o600 });
  } catch (err) {
    if (errCode(err) === 'EEXIST') return false;
    throw err;
  }
  try {
    // Nobody else can remove this record while the marker is ours, and its holder is gone; so if
    // the file still holds it now, removing it removes exactly it.
    if (readRaw(dir) === raw) unlinkSync(lockPath(dir));
  } finally {
    unlinkQuietly(marker);
  }
  return true;
}

function hold(dir: string, real: string, record: LockRecord): DataDirLock {
  let released = false;
  const lock: DataDirLock = {
    dir,
    record,
    advertise(url) {
      if (released) return;
      record.url = url;
      // A whole new record renamed over the old one: readers see one or the other, never half.
      renameSync(writeTemp(dir, record), lockPath(dir));
    },
    release() {
      if (released) return;
      released = true;
      held.delete(real);
      try {
        const current = parseRecord(readRaw(dir) ?? '');
        if (current?.token === record.token) unlinkSync(lockPath(dir));
      } catch {
        // The directory is gone or unreadable: nothing of ours is left to remove.
      }
    },
  };
  held.set(real, lock);
  if (!exitHook) {
    exitHook = true;
    // A process that exits without closing its database (process.exit after a shutdown deadline)
    // still leaves no lock behind. A killed one does; the next opener takes that over.
    process.on('exit', () => {
      for (const l of [...held.values()]) l.release();
    });
  }
  return lock;
}

/** 0.0.0.0 and :: are where a server listens, not where a client connects: use the loopback. */
export function connectableUrl(address: string): string {
  return address.replace('//0.0.0.0:', '//127.0.0.1:').replace('//[::]:', '//[::1]:');
}
