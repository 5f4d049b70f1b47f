import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';
import { classifyTestFiles, engineSplit } from '../scripts/engine-files.mjs';

/**
 * The PostgreSQL pass of `npm test` runs only the files that can tell the engines apart
 * (scripts/engine-files.mjs, docs/testing.md): these tests hold the reading of the imports to what
 * Node will load, so that no database test can drop out of that pass unnoticed.
 */
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'cdp-engine-files-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A little project of these files, classified. */
function classify(files: Record<string, string>) {
  const root = mkdtempSync(join(dir, 'p-'));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  const tests = Object.keys(files).filter((f) => f.endsWith('.test.ts'));
  return Object.fromEntries([...classifyTestFiles(root, tests)].map(([f, c]) => [f, c.why]));
}

describe('which test files run on both engines', () => {
  it('every file that starts the harness, a child service or a driver, at any depth', () => {
    const all = classifyTestFiles(ROOT);
    for (const file of [
      'src/modules/ingest/ingest.test.ts', // the harness
      'src/modules/profiles/traits.test.ts', // a service that imports the database layer
      'test/cli.test.ts', // child processes
      'test/browser/console.browser.test.ts',
      'src/platform/db/timestamps.test.ts', // the driver itself
      'src/platform/http/rate-limit.test.ts', // Redis
    ]) {
      expect(all.get(file)?.bound, file).toBe(true);
    }
    for (const file of ['src/platform/mutex.test.ts', 'src/modules/segments/query/parse.test.ts']) {
      expect(all.get(file)).toEqual(expect.objectContaining({ bound: false, why: null }));
    }
    const { bound, free } = engineSplit(ROOT);
    expect(bound.length + free.length).toBe(all.size);
  });

  it('follows imports of every form, and counts what it cannot follow as touching an engine', () => {
    const why = classify({
      'db.ts': 'export const url = process.env.DATABASE_URL;\n',
      'redis.ts': "export const url = process.env['TEST_REDIS_URL'];\n",
      'pure.ts': "import type { url } from './db';\nexport const twice = (n: number) => n * 2;\n",
      'via-helper.ts': "export * from './db';\n",
      'multi-line.test.ts': "import {\n  a,\n  type B,\n} from './via-helper';\n",
      'dynamic.test.ts': "const m = await import('./db');\n",
      'computed.test.ts': "const name = './db';\nconst m = await import(name);\n",
      'mocked.test.ts': "vi.mock('./redis', () => ({}));\n",
      'missing.test.ts': "import { x } from './nowhere';\n",
      'child.test.ts': "import { spawn } from 'node:child_process';\n",
      'driver.test.ts': "import { Pool } from 'pg';\n",
      'env.test.ts': 'const env = { ...process.env };\n',
      'type-only.test.ts': "import type { url } from './db';\nimport { twice } from './pure.js';\n",
    });
    expect(why).toEqual({
      'multi-line.test.ts': 'multi-line.test.ts → via-helper.ts → db.ts: reads DATABASE_URL',
      'dynamic.test.ts': 'dynamic.test.ts → db.ts: reads DATABASE_URL',
      'computed.test.ts': 'computed.test.ts: imports a computed path (not followed)',
      'mocked.test.ts': 'mocked.test.ts → redis.ts: reads a Redis address',
      'missing.test.ts': 'missing.test.ts: imports ./nowhere, which could not be found',
      'child.test.ts': 'child.test.ts: imports node:child_process (starts a child process)',
      'driver.test.ts': 'driver.test.ts: imports pg (PostgreSQL driver)',
      'env.test.ts': 'env.test.ts: passes the whole environment on',
      'type-only.test.ts': null,
    });
  });

  it('reaches every module esbuild bundles for a file that runs once', async () => {
    const free = [...classifyTestFiles(ROOT)].filter(([, c]) => !c.bound);
    // esbuild resolves as Node and vitest do; the reading of the imports must miss none of its modules.
    const { metafile } = await build({
      entryPoints: free.map(([f]) => join(ROOT, f)),
      absWorkingDir: ROOT,
      bundle: true,
      write: false,
      metafile: true,
      platform: 'node',
      format: 'esm',
      packages: 'external',
      outdir: join(dir, 'out'),
      logLevel: 'silent',
    });
    for (const [file, c] of free) {
      const output = Object.values(metafile.outputs).find((o) => o.entryPoint === file);
      expect(output, file).toBeDefined();
      const bundled = Object.keys(output!.inputs).map((i) => resolve(ROOT, i));
      const missed = bundled.filter((m) => !c.reached!.includes(m));
      expect(missed, `${file}: modules esbuild loads that the reading did not reach`).toEqual([]);
      const packages = output!.imports.filter((i) => i.external).map((i) => i.path);
      expect(
        packages.filter((p) =>
          /^(node:)?(child_process|worker_threads|cluster)$|^pg$|pglite|ioredis/.test(p),
        ),
        file,
      ).toEqual([]);
    }
  });
});
