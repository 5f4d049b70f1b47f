/**
 * `npm run bench [-- name …]`: runs every bench/*.bench.ts in sequence (or only those named, e.g.
 * `npm run bench -- auth memory`). Each bench file exports `default async function run()` and prints
 * its own result lines through bench/lib.ts; this runner prints a summary and exits non-zero when
 * a bench crashed (a MISS is a finding, not a crash, so it does not fail the run).
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { cleanup, formatLine, ROOT, reported } from './lib';

const BENCH_DIR = join(ROOT, 'bench');

async function main(argv: string[]): Promise<number> {
  const available = readdirSync(BENCH_DIR)
    .filter((f) => f.endsWith('.bench.ts'))
    .map((f) => f.slice(0, -'.bench.ts'.length))
    .sort();
  const unknown = argv.filter((a) => !available.includes(a));
  if (unknown.length > 0) {
    process.stderr.write(`unknown bench: ${unknown.join(', ')}; available: ${available.join(', ')}\n`);
    return 2;
  }
  const chosen = argv.length > 0 ? argv : available;
  process.stdout.write(
    `bench run ${new Date().toISOString()} · node ${process.version} · benches: ${chosen.join(', ')}\n`,
  );

  const failed: string[] = [];
  for (const name of chosen) {
    process.stdout.write(`\n== ${name}\n`);
    const started = Date.now();
    try {
      const mod = (await import(pathToFileURL(join(BENCH_DIR, `${name}.bench.ts`)).href)) as {
        default?: () => Promise<void>;
      };
      if (typeof mod.default !== 'function') throw new Error('exports no default run() function');
      await mod.default();
    } catch (err) {
      failed.push(name);
      process.stdout.write(
        `${name}: CRASHED ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
      );
    } finally {
      // A bench that forgot to stop a child or drop a schema is cleaned up here, before the next.
      await cleanup();
    }
    process.stdout.write(`(${name}: ${((Date.now() - started) / 1000).toFixed(0)} s)\n`);
  }

  const lines = reported();
  process.stdout.write('\n== summary\n');
  for (const l of lines) process.stdout.write(`${formatLine(l)}\n`);
  const misses = lines.filter((l) => l.pass === false).length;
  process.stdout.write(
    `${lines.length} figures, ${misses} MISS${failed.length ? `, crashed: ${failed.join(', ')}` : ''}\n`,
  );
  return failed.length > 0 ? 1 : 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  async (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    await cleanup();
    process.exit(1);
  },
);
