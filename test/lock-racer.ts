import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { DataDirInUseError, lockDataDir } from '../src/platform/db/data-dir-lock';
import { waitUntil } from './wait';

/**
 * One of several processes racing for the same stale lock (data-dir-lock.test.ts). Round by round:
 * waits for `go-<n>` in ROOT, tries to lock ROOT/<n>, prints `<n> won` or `<n> refused`, and a
 * winner holds the lock until `release-<n>` appears.
 */
const root = process.env.RACE_ROOT!;
const rounds = Number(process.env.RACE_ROUNDS);
const spinUntil = (file: string) => {
  // A tight loop, not a timer: the racers should leave the start line as close together as possible.
  while (!existsSync(file)) {
    /* spin */
  }
};

process.stdout.write('ready\n');
for (let n = 0; n < rounds; n++) {
  spinUntil(join(root, `go-${n}`));
  try {
    const lock = await lockDataDir(join(root, String(n)));
    process.stdout.write(`${n} won\n`);
    await waitUntil(() => existsSync(join(root, `release-${n}`)), {
      what: `release-${n}`,
      timeoutMs: 60_000,
      intervalMs: 5,
    });
    lock.release();
  } catch (err) {
    if (!(err instanceof DataDirInUseError)) throw err;
    process.stdout.write(`${n} refused\n`);
  }
}
