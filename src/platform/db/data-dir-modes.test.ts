import { chmodSync, lstatSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { narrowDataDirModes } from './data-dir-modes';
import { openPglite } from './pglite-open';

/** The data directory's modes, narrowed by a walk and kept narrow by PGlite's file layer (test/data-dir-modes.test.ts starts the real service). */

const scratch = mkdtempSync(join(tmpdir(), 'cdp-narrow-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const modeOf = (path: string) => `0${(lstatSync(path).mode & 0o777).toString(8)}`;

describe('narrowing the data directory', () => {
  it('makes every directory 0700 and every file 0600 that others could use, and counts them by mode', () => {
    const dir = join(scratch, 'tree');
    mkdirSync(join(dir, 'base', '5'), { recursive: true });
    writeFileSync(join(dir, 'pg_control'), 'x');
    writeFileSync(join(dir, 'base', '5', '1259'), 'x');
    writeFileSync(join(dir, 'base', '5', 'pg_internal.init'), 'x');
    writeFileSync(join(dir, 'owner-only'), 'x');
    chmodSync(dir, 0o755);
    chmodSync(join(dir, 'base'), 0o777);
    chmodSync(join(dir, 'base', '5'), 0o700);
    chmodSync(join(dir, 'pg_control'), 0o666);
    chmodSync(join(dir, 'base', '5', '1259'), 0o666);
    chmodSync(join(dir, 'base', '5', 'pg_internal.init'), 0o644);
    chmodSync(join(dir, 'owner-only'), 0o400);
    // A link someone placed must not carry a chmod outside the directory.
    const outside = join(scratch, 'outside');
    writeFileSync(outside, 'x');
    chmodSync(outside, 0o644);
    symlinkSync(outside, join(dir, 'link'));

    expect(narrowDataDirModes(dir)).toEqual({
      files: 3,
      directories: 2,
      modes: { '0755': 1, '0777': 1, '0666': 2, '0644': 1 },
    });
    expect(modeOf(dir)).toBe('0700');
    expect(modeOf(join(dir, 'base'))).toBe('0700');
    expect(modeOf(join(dir, 'pg_control'))).toBe('0600');
    expect(modeOf(join(dir, 'base', '5', 'pg_internal.init'))).toBe('0600');
    // Narrower than the promise is left as its owner set it; the link's target is untouched.
    expect(modeOf(join(dir, 'owner-only'))).toBe('0400');
    expect(modeOf(outside)).toBe('0644');
    // Nothing left to narrow: the second pass changes nothing.
    expect(narrowDataDirModes(dir)).toEqual({ files: 0, directories: 0, modes: {} });
  });

  it('answers nothing narrowed for a directory that does not exist', () => {
    expect(narrowDataDirModes(join(scratch, 'absent'))).toEqual({ files: 0, directories: 0, modes: {} });
  });

  it('keeps a file PostgreSQL writes through C stdio while it runs owner-only, whatever the umask', async () => {
    // Such files (pg_internal.init, statistics, COPY … TO a file) get 0644 from PGlite's file layer:
    // a COPY to a file under the data directory stands for all of them.
    const previous = process.umask(0);
    const dir = join(scratch, 'running');
    try {
      const pglite = await openPglite(dir);
      try {
        const { rows } = await pglite.query<{ data_directory: string }>('SHOW data_directory');
        await pglite.exec(`COPY (SELECT 'a customer''s note') TO '${rows[0]!.data_directory}/copied.txt'`);
      } finally {
        await pglite.close();
      }
    } finally {
      process.umask(previous);
    }
    expect(modeOf(join(dir, 'copied.txt'))).toBe('0600');
    expect(modeOf(dir)).toBe('0700');
  });
});
