import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { migrate } from '../src/platform/db/migrate';
import { dumpMigratedDatabase } from '../src/platform/db/pglite';
import { PROJECT_ROOT } from '../src/platform/project-root';

/**
 * Once per test run, before any file (docs/testing.md, "What a run prepares once"):
 *
 * - a migrated embedded database dumped to a file, which every PGlite the tests open (in memory, or
 *   a new data directory) starts from (PGLITE_TEMPLATE). Initdb and forty-odd migrations cost each
 *   service several seconds on a busy two-core machine; unpacking the dump costs a fraction. A test
 *   about initdb or the migrations opts out with `PGLITE_TEMPLATE: ''`.
 * - the `cdp` command bundled to JavaScript (CDP_TEST_ENTRY), which the child-process tests run
 *   (test/child.ts): loading the sources through the TypeScript loader took each child seconds more.
 *
 * Both are made afresh from this checkout on every run, so neither can be stale; both go at the end.
 */
export default async function setup(): Promise<() => Promise<void>> {
  const made: string[] = [];
  if (process.env.PGLITE_TEMPLATE === undefined) {
    const dir = mkdtempSync(join(tmpdir(), 'cdp-template-'));
    made.push(dir);
    const file = join(dir, 'migrated.tar');
    await dumpMigratedDatabase(file, (db) => migrate(db));
    process.env.PGLITE_TEMPLATE = file;
  }
  if (process.env.CDP_TEST_ENTRY === undefined) {
    // Inside the checkout: the bundle finds migrations/ and web/dist from it (platform/project-root.ts).
    await mkdir(join(PROJECT_ROOT, '.build'), { recursive: true });
    const dir = mkdtempSync(join(PROJECT_ROOT, '.build', 'test-'));
    made.push(dir);
    await build({
      // pglite-thread is the PGlite worker thread's entry, found beside the chunks (pglite-worker.ts).
      entryPoints: { cdp: 'src/cli.ts', 'pglite-thread': 'src/platform/db/pglite-thread.ts' },
      absWorkingDir: PROJECT_ROOT,
      outdir: dir,
      bundle: true,
      splitting: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      packages: 'external',
      logLevel: 'warning',
    });
    process.env.CDP_TEST_ENTRY = join(dir, 'cdp.js');
  }
  return async () => {
    for (const dir of made) rmSync(dir, { recursive: true, force: true });
  };
}
