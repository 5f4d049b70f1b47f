import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * The run's summary (scripts/summarize.mjs) reads the skip markers test/skips.ts puts in a skipped
 * test's name: it tells a case that does not apply from a service that was missing, and under
 * CI=true refuses the second (and a skip that does not say why).
 */
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'cdp-summary-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Status = 'passed' | 'failed' | 'skipped';

/**
 * A vitest JSON report of one engine's run with these tests, as `--reporter=json` writes it, all in
 * test/some.test.ts (which does not exist, so counts as a file that runs on both engines) or in
 * the test files named.
 */
function report(engine: string, tests: Array<[string, Status]>, testFiles = ['test/some.test.ts']): string {
  const file = join(dir, `${engine}.json`);
  const count = (s: Status) => tests.filter(([, st]) => st === s).length;
  writeFileSync(
    file,
    JSON.stringify({
      numPassedTests: count('passed') * testFiles.length,
      numFailedTests: count('failed') * testFiles.length,
      numPendingTests: count('skipped') * testFiles.length,
      numTodoTests: 0,
      testResults: testFiles.map((testFile) => ({
        name: join(ROOT, testFile),
        status: count('failed') > 0 ? 'failed' : 'passed',
        message: '',
        assertionResults: tests.map(([fullName, status]) => ({
          fullName,
          title: fullName,
          status,
          failureMessages: status === 'failed' ? ['AssertionError: no'] : [],
        })),
      })),
    }),
  );
  return file;
}

function summarize(files: string[], ci: boolean) {
  const env: Record<string, string> = { PATH: process.env.PATH ?? '' };
  if (ci) env.CI = 'true';
  const r = spawnSync(process.execPath, [join(ROOT, 'scripts', 'summarize.mjs'), ...files], {
    env,
    encoding: 'utf8',
  });
  const lines = r.stdout.trim().split('\n');
  return { code: r.status, out: r.stdout, last: lines[lines.length - 1] };
}

const pglite = () =>
  report('pglite', [
    ['keys are hashed', 'passed'],
    ['two workers [not applicable on pglite: PGlite is one process] apply every event once', 'skipped'],
    ['settings across processes [not applicable on pglite: PGlite is one process] apply at once', 'skipped'],
    ['GET /tenant/orders pages a filtered set [not applicable: the listing takes no filter]', 'skipped'],
  ]);

describe('the summary of a test run', () => {
  it('counts the cases that do not apply apart, and passes a CI run whose every skip is one', () => {
    const postgres = report('postgres', [
      ['keys are hashed', 'passed'],
      [
        'two processes on one DATA_DIR [not applicable on postgres: the lock guards the embedded DATA_DIR]',
        'skipped',
      ],
    ]);
    const r = summarize([pglite(), postgres], true);
    expect(r.code, r.out).toBe(0);
    expect(r.last).toBe('tests: 2 passed, 0 failed, 4 skipped (4 not applicable, 0 for a missing service)');
    expect(r.out).toContain('  2 on pglite: PGlite is one process');
    expect(r.out).toContain('  1 on pglite: the listing takes no filter');
    expect(r.out).toContain('  1 on postgres: the lock guards the embedded DATA_DIR');
  });

  it('names a skip for a missing service, and fails the run with it under CI only', () => {
    const postgres = report('postgres', [
      ['keys are hashed', 'passed'],
      ['rate limits in Redis [needs redis: TEST_REDIS_URL] count one budget', 'skipped'],
    ]);
    const local = summarize([pglite(), postgres], false);
    expect(local.code, local.out).toBe(0);
    expect(local.last).toBe(
      'tests: 2 passed, 0 failed, 4 skipped (3 not applicable, 1 for a missing service)',
    );
    expect(local.out).toContain('SKIPPED FOR A MISSING SERVICE:\n  1 postgres: redis (TEST_REDIS_URL)');
    const ci = summarize([pglite(), postgres], true);
    expect(ci.code, ci.out).toBe(1);
    expect(ci.out).toContain('CI: every test must run here');
  });

  it('fails a CI run that has no PostgreSQL report: that engine went untested', () => {
    const r = summarize([pglite()], true);
    expect(r.code, r.out).toBe(1);
    expect(r.out).toContain('1 postgres: no report (the run did not happen)');
    expect(summarize([pglite()], false).code).toBe(0);
  });

  it('fails a CI run whose PostgreSQL pass left out a file that can tell the engines apart', () => {
    // The parser's tests run the same code on either engine: once is enough. The CLI's start services.
    const pure = 'src/modules/segments/query/parse.test.ts';
    const services = 'test/cli.test.ts';
    const pg = report('pglite', [['works', 'passed']], [pure, services]);
    const complete = summarize([pg, report('postgres', [['works', 'passed']], [services])], true);
    expect(complete.code, complete.out).toBe(0);
    expect(complete.out).toContain('(1 files that cannot tell the engines apart ran on pglite only)');
    expect(complete.last).toBe(
      'tests: 3 passed, 0 failed, 0 skipped (0 not applicable, 0 for a missing service)',
    );

    const partial = summarize([pg, report('postgres', [['works', 'passed']], [pure])], true);
    expect(partial.code, partial.out).toBe(1);
    expect(partial.out).toMatch(/1 postgres: test\/cli\.test\.ts did not run \(test\/cli\.test\.ts: .*\)/);
  });

  it('counts a skip without a marker as one without a reason, which CI refuses', () => {
    const postgres = report('postgres', [
      ['keys are hashed', 'passed'],
      ['something skipped by hand', 'skipped'],
    ]);
    const local = summarize([pglite(), postgres], false);
    expect(local.code).toBe(0);
    expect(local.last).toBe(
      'tests: 2 passed, 0 failed, 4 skipped (3 not applicable, 0 for a missing service, 1 without a reason)',
    );
    expect(local.out).toContain('postgres: test/some.test.ts > something skipped by hand');
    expect(summarize([pglite(), postgres], true).code).toBe(1);
  });

  it('still fails on a failed test, naming it at the end', () => {
    const postgres = report('postgres', [['keys are hashed', 'failed']]);
    const r = summarize([pglite(), postgres], false);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(
      /FAILED .*postgres\.json: .*some\.test\.ts > keys are hashed\n {4}AssertionError: no/,
    );
    expect(r.last).toBe('tests: 1 passed, 1 failed, 3 skipped (3 not applicable, 0 for a missing service)');
  });
});
