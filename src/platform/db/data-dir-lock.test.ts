import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { needs } from '../../../test/skips';
import { waitUntil } from '../../../test/wait';
import {
  DataDirInUseError,
  heldLock,
  LOCK_FILE,
  type LockRecord,
  lockDataDir,
  processStart,
  readLockHolder,
} from './data-dir-lock';

const root = mkdtempSync(join(tmpdir(), 'cdp-lock-unit-'));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
  rmSync(root, { recursive: true, force: true });
});

let n = 0;
const freshDir = () => join(root, `d${n++}`);
const lockFile = (dir: string) => join(dir, LOCK_FILE);
const readRecord = (dir: string) => JSON.parse(readFileSync(lockFile(dir), 'utf8')) as LockRecord;

/** A lock file as another process would have left it. */
function leaveRecord(dir: string, over: Partial<LockRecord>): void {
  mkdirSync(dir, { recursive: true });
  const record: LockRecord = {
    pid: 1,
    host: hostname(),
    process_start: null,
    command: 'cdp start',
    since: new Date().toISOString(),
    url: null,
    token: 'earlier',
    ...over,
  };
  writeFileSync(lockFile(dir), JSON.stringify(record));
}

/** The PID of a process that has exited (and been reaped). */
function deadPid(): number {
  const { pid } = spawnSync(process.execPath, ['-e', '']);
  return pid!;
}

describe('the data-directory lock', () => {
  it('records its holder in a file only the owner can read, and removes it on release', async () => {
    const dir = freshDir();
    const lock = await lockDataDir(dir);
    const record = readRecord(dir);
    expect(record).toMatchObject({ pid: process.pid, host: hostname(), url: null });
    expect(record.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(statSync(lockFile(dir)).mode & 0o777).toBe(0o600);
    expect(heldLock(dir)).toBe(lock);

    lock.advertise('http://127.0.0.1:30150');
    expect(readRecord(dir)).toEqual({ ...record, url: 'http://127.0.0.1:30150' });
    expect(readLockHolder(dir)?.url).toBe('http://127.0.0.1:30150');

    lock.release();
    expect(readdirSync(dir)).toEqual([]);
    expect(heldLock(dir)).toBeNull();
    expect(readLockHolder(dir)).toBeNull();
  });

  it('refuses a second open in the same process, naming this PID, and leaves the first holding', async () => {
    const dir = freshDir();
    const lock = await lockDataDir(dir);
    const second = lockDataDir(dir);
    await expect(second).rejects.toBeInstanceOf(DataDirInUseError);
    await expect(second).rejects.toThrow(new RegExp(`is in use by .*PID ${process.pid}\\b.*stop it first`));
    expect(readRecord(dir).token).toBe(lock.record.token);
    lock.release();
  });

  it('takes over the lock of a process that no longer exists', async () => {
    const dir = freshDir();
    leaveRecord(dir, { pid: deadPid() });
    expect(readLockHolder(dir)).toBeNull();
    const lock = await lockDataDir(dir);
    expect(readRecord(dir).pid).toBe(process.pid);
    lock.release();
  });

  // Linux records a process's start time (/proc/<pid>/stat); elsewhere a reused PID cannot be told.
  needs('process start times', processStart(process.pid) !== null).it(
    'takes over a lock whose PID now belongs to another process, and not one whose holder still runs',
    async () => {
      const sleeper = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)']);
      children.push(sleeper);
      const pid = sleeper.pid!;
      const reused = freshDir();
      leaveRecord(reused, { pid, process_start: `${processStart(pid)}0` });
      const lock = await lockDataDir(reused);
      lock.release();

      const live = freshDir();
      leaveRecord(live, { pid, process_start: processStart(pid) });
      expect(readLockHolder(live)?.pid).toBe(pid);
      await expect(lockDataDir(live)).rejects.toThrow(new RegExp(`PID ${pid}\\b`));
      sleeper.kill('SIGKILL');
    },
  );

  it('refuses, never takes over, a lock held on another host, whose process it cannot see', async () => {
    const dir = freshDir();
    leaveRecord(dir, { pid: deadPid(), host: 'elsewhere.example' });
    await expect(lockDataDir(dir)).rejects.toThrow(
      /PID \d+ on host elsewhere\.example.*if it no longer runs, remove .*cdp\.lock$/,
    );
  });

  it('takes over a lock file that holds no record (never written by a live holder)', async () => {
    const dir = freshDir();
    mkdirSync(dir);
    writeFileSync(lockFile(dir), '');
    const lock = await lockDataDir(dir);
    expect(readRecord(dir).pid).toBe(process.pid);
    lock.release();
  });

  it('is taken by createPgliteDb and released when the database closes; a refused second open changes nothing', async () => {
    const { createPgliteDb } = await import('./pglite');
    const dir = freshDir();
    const db = await createPgliteDb({ dataDir: dir, inProcess: true });
    expect(readRecord(dir).pid).toBe(process.pid);
    await expect(createPgliteDb({ dataDir: dir, inProcess: true })).rejects.toBeInstanceOf(DataDirInUseError);
    // The refused second open touched nothing: the first still works.
    expect((await db.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    await db.close();
    expect(readdirSync(dir)).not.toContain(LOCK_FILE);
  });
});

describe('processes racing for one stale lock', () => {
  it('let exactly one of them win, round after round', { timeout: 120_000 }, async () => {
    const RACERS = 6;
    const ROUNDS = 12;
    const raceRoot = freshDir();
    mkdirSync(raceRoot);
    for (let r = 0; r < ROUNDS; r++) leaveRecord(join(raceRoot, String(r)), { pid: deadPid() });

    const outputs: string[] = Array.from({ length: RACERS }, () => '');
    const racer = fileURLToPath(new URL('../../../test/lock-racer.ts', import.meta.url));
    // Each racer's exit, listened for from its start: a loser of the last round exits before the
    // winner is released, and an 'exit' listened for only then was sometimes already gone (a hang).
    const exits = outputs.map((_, i) => {
      const child = spawn(process.execPath, ['--import', 'tsx', racer], {
        env: { ...process.env, RACE_ROOT: raceRoot, RACE_ROUNDS: String(ROUNDS) },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      children.push(child);
      child.stdout!.setEncoding('utf8').on('data', (d: string) => {
        outputs[i] += d;
      });
      return new Promise((r) => child.once('exit', r));
    });
    const until = (check: () => boolean, what: string) =>
      waitUntil(check, { what, timeoutMs: 20_000, intervalMs: 10, detail: () => outputs.join('\n--\n') });
    await until(() => outputs.every((o) => o.includes('ready')), 'the racers to start');

    for (let r = 0; r < ROUNDS; r++) {
      writeFileSync(join(raceRoot, `go-${r}`), '');
      const said = (i: number) => outputs[i]!.match(new RegExp(`^${r} (won|refused)$`, 'm'))?.[1];
      await until(() => outputs.every((_, i) => said(i) !== undefined), `round ${r} to finish`);
      const winners = outputs.filter((_, i) => said(i) === 'won');
      expect(winners, `round ${r}`).toHaveLength(1);
      writeFileSync(join(raceRoot, `release-${r}`), '');
    }
    await Promise.all(exits);
  });
});
