import { closeSync, openSync, readdirSync, readFileSync, readlinkSync, readSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';

/**
 * What a crash left for an embedded PGlite to replay, read from its files before it opens, and how
 * far the replay has got while it runs. PGlite replays the write-ahead log (WAL) inside its open
 * call, in WASM, with no progress of its own (PostgreSQL's `log_startup_progress_interval` needs
 * timers PGlite does not run), so the service reads it from outside.
 *
 * The control file (`global/pg_control`) starts with the same fields in every PostgreSQL since 9.x:
 * system identifier (u64), control and catalog versions (u32 each), the cluster state (i32 at 16),
 * the time of the last change (i64 at 24), the last checkpoint's location (u64 at 32) and that
 * checkpoint's copy, whose first field is where replay starts (`redo`, u64 at 40).
 */

/** `DBState`: a cleanly stopped cluster says shut down; anything else means replay at the next open. */
const SHUT_DOWN = 1;
const SHUT_DOWN_IN_RECOVERY = 2;
/** A WAL page header: magic (u16), info (u16), timeline (u32), the page's own WAL address (u64 at 8). */
const PAGE_ADDR_OFFSET = 8;

export interface PendingRecovery {
  /** Where replay starts. */
  redo: bigint;
  /** Size of one WAL segment file. */
  segmentBytes: number;
  /** WAL written since `redo`, an upper bound (the last segment is counted whole). */
  walBytes: number;
}

const segmentName = /^[0-9A-F]{24}$/;

/** The segment number a WAL file name stands for (timeline, then the number in two 32-bit halves). */
function segmentNumber(name: string, segmentBytes: number): bigint {
  const perId = 0x1_0000_0000n / BigInt(segmentBytes);
  return BigInt(`0x${name.slice(8, 16)}`) * perId + BigInt(`0x${name.slice(16, 24)}`);
}

/** The WAL address a segment file's first page says it holds. */
function firstPageAddress(path: string): bigint | null {
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.alloc(16);
    if (readSync(fd, buf, 0, 16, 0) < 16) return null;
    return buf.readBigUInt64LE(PAGE_ADDR_OFFSET);
  } finally {
    closeSync(fd);
  }
}

/**
 * Null when the cluster in `dataDir` was stopped cleanly (or is not there); otherwise how much WAL
 * the next open will replay. Segments after the end of the log are old files kept for reuse, and
 * their first page still carries their previous address, which is how the end is found.
 */
export function pendingRecovery(dataDir: string): PendingRecovery | null {
  let control: Buffer;
  try {
    control = readFileSync(join(dataDir, 'global', 'pg_control'));
  } catch {
    return null;
  }
  if (control.length < 48) return null;
  const state = control.readInt32LE(16);
  if (state === SHUT_DOWN || state === SHUT_DOWN_IN_RECOVERY) return null;
  const redo = control.readBigUInt64LE(40);

  const dir = join(dataDir, 'pg_wal');
  const names = readdirSync(dir)
    .filter((n) => segmentName.test(n))
    .sort();
  if (names.length === 0) return { redo, segmentBytes: 0, walBytes: 0 };
  const segmentBytes = statSync(join(dir, names[0]!)).size;
  const seg = BigInt(segmentBytes);
  let last = redo / seg;
  for (const name of names) {
    const n = segmentNumber(name, segmentBytes);
    if (n <= last) continue;
    if (n !== last + 1n || firstPageAddress(join(dir, name)) !== n * seg) break;
    last = n;
  }
  return { redo, segmentBytes, walBytes: Number((last + 1n) * seg - redo) };
}

/**
 * How many bytes of WAL have been replayed, judged by the WAL segment this process has open
 * (`/proc/self/fd`; PGlite reads one segment at a time, on a thread of this process). Null where
 * there is no /proc, or when no segment is open at this moment.
 */
export function replayedBytes(dataDir: string, recovery: PendingRecovery): number | null {
  if (recovery.segmentBytes === 0) return null;
  let fds: string[];
  try {
    fds = readdirSync('/proc/self/fd');
  } catch {
    return null;
  }
  const walDir = join(resolve(dataDir), 'pg_wal');
  let best: bigint | null = null;
  for (const fd of fds) {
    let target: string;
    try {
      target = readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      continue;
    }
    const name = target.slice(walDir.length + 1);
    if (!target.startsWith(`${walDir}/`) || !segmentName.test(name)) continue;
    const n = segmentNumber(name, recovery.segmentBytes);
    if (best === null || n > best) best = n;
  }
  if (best === null) return null;
  const done = Number(best * BigInt(recovery.segmentBytes) - recovery.redo);
  return Math.max(0, Math.min(recovery.walBytes, done));
}
