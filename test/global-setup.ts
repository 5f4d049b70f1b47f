import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { migrate } from '../src/platform/db/migrate';
import { dumpMigratedDatabase } from '../src/platform/db/pglite';

/**
 * Once per test run, before any file: a migrated embedded database dumped to a file, which every
 * PGlite the tests open (in memory, or a new data directory) starts from (PGLITE_TEMPLATE,
 * docs/testing.md). Initdb and forty-odd migrations cost each service several seconds on a busy
 * two-core machine; unpacking the dump costs a fraction. Made afresh every run, so it is always
 * what the migrations of this checkout make; a test about initdb or the migrations opts out with
 * `PGLITE_TEMPLATE: ''`.
 */
export default async function setup(): Promise<() => void> {
  if (process.env.PGLITE_TEMPLATE !== undefined) return () => {};
  const dir = mkdtempSync(join(tmpdir(), 'cdp-template-'));
  const file = join(dir, 'migrated.tar');
  await dumpMigratedDatabase(file, (db) => migrate(db));
  process.env.PGLITE_TEMPLATE = file;
  return () => rmSync(dir, { recursive: true, force: true });
}
