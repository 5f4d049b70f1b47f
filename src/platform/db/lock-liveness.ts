import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { errCode, type LockRecord } from './lock-record';

/** The holder's identity beyond its PID: boot id and start time in clock ticks (Linux). */
export function processStart(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces and parentheses): state is field 3,
    // starttime field 22.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    return `${boot}/${fields[19]}`;
  } catch {
    return null;
  }
}

/** A zombie has exited; only its parent has not collected it yet. */
function isZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return false;
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return !isZombie(pid);
  } catch (err) {
    // EPERM: it exists, under another user.
    return errCode(err) === 'EPERM';
  }
}

export type Liveness = 'alive' | 'dead' | 'elsewhere';

/**
 * Whether the holder a record names still runs. `ownToken`: the token of the lock this process holds
 * on that directory, if any.
 */
export function livenessOf(r: LockRecord, ownToken: string | undefined): Liveness {
  // Another machine's (or container's) process cannot be seen from here: it is taken as alive.
  if (r.host !== hostname()) return 'elsewhere';
  if (r.pid === process.pid) {
    // This very process holds it (a second open in the same process), or an earlier process had
    // the same PID (a container's PID 1 after a restart).
    return ownToken === r.token ? 'alive' : 'dead';
  }
  if (!pidAlive(r.pid)) return 'dead';
  const start = r.process_start === null ? null : processStart(r.pid);
  if (start !== null && start !== r.process_start) return 'dead';
  return 'alive';
}
