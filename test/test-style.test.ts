import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * Two rules of the test code, kept by reading it (docs/testing.md): it waits for conditions, never
 * for a fixed time (test/wait.ts), and a skip says why (test/skips.ts), so that the summary of a
 * run can tell a case that does not apply from a service that was missing.
 */
const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Test code: *.test.ts and *.test-kit.ts under src/ and test/, and test/'s helpers. */
function testFiles(dir: string, all = false): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return testFiles(path, all);
    return /\.test(-kit)?\.ts$/.test(e.name) || (all && e.name.endsWith('.ts')) ? [path] : [];
  });
}
const files = [...testFiles('src'), ...testFiles('test', true)];

/** Lines of `files` (as `path:line: text`) that match `pattern`, comment lines left out. */
const linesMatching = (pattern: RegExp, except: readonly string[]) =>
  files
    .filter((f) => !except.includes(relative(ROOT, join(ROOT, f))))
    .flatMap((f) =>
      readFileSync(join(ROOT, f), 'utf8')
        .split('\n')
        .map((text, i) => ({ text, where: `${f}:${i + 1}` }))
        .filter(({ text }) => pattern.test(text) && !/^\s*(\/\/|\*)/.test(text))
        .map(({ text, where }) => `${where}: ${text.trim()}`),
    );

/**
 * Files whose fixed sleeps were not replaced yet, because other work was changing them at the
 * time: remove each entry once its sleeps are gone (this test then keeps them out).
 */
describe('the test code', () => {
  it('waits for conditions (waitUntil), or lets time pass on purpose (letTimePass), never sleeps', () => {
    const sleeps = /setTimeout\(\s*(r|res|resolve)\s*,|\b(sleep|delay)\(/;
    expect(linesMatching(sleeps, ['test/wait.ts', 'test/test-style.test.ts'])).toEqual([]);
  });

  it('skips only through test/skips.ts, which says why', () => {
    const skips = /\.(skipIf|runIf)\(|\b(it|test|describe)\.skip\b|\.todo\(|\b(ctx|context)\.skip\(/;
    expect(linesMatching(skips, ['test/skips.ts', 'test/test-style.test.ts'])).toEqual([]);
  });
});
