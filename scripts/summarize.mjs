// Adds up vitest JSON reports (one per engine: .test-results/<engine>.json) and prints the plain
// closing line CI reads: "tests: N passed, N failed, N skipped (N not applicable, N for a missing
// service)". Exits 1 when anything failed or nothing ran.
//
// Each skip is told by the marker test/skips.ts puts in a skipped test's name (docs/testing.md):
// `[not applicable on pglite: why]` or `[not applicable: why]` (the case does not exist there), or
// `[needs redis: …]` (the environment lacks something). Under CI=true a skip for a missing service,
// a skip that does not say why, or a missing engine's report fails the run: CI must test everything.
//
// The PostgreSQL pass runs only the files whose run can depend on the engine (scripts/engine-files.mjs,
// docs/testing.md); each of those in the PGlite report must be in the PostgreSQL report too, or it
// counts as a skip for a missing service: that engine went untested for it.
//
// Each failed test is named with the first lines of its failure, here at the very end, because
// CI keeps only the tail of a long log and a failure far above it would otherwise go unseen.
import { readFileSync } from 'node:fs';
import { basename, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { classifyTestFiles } from './engine-files.mjs';

const NOT_APPLICABLE = /\[not applicable(?: on (\w+))?: ([^\]]*)\]/;
const NEEDS = /\[needs ([^\]:]+)(?:: ([^\]]*))?\]/;
const ENGINES = ['pglite', 'postgres'];
const ci = process.env.CI === 'true';
const ROOT = fileURLToPath(new URL('..', import.meta.url));

const files = process.argv.slice(2);
let passed = 0;
let failed = 0;
const failures = [];
/** Skips by kind, then by "engine: reason", counted. */
const skips = { notApplicable: new Map(), missing: new Map(), unexplained: new Map() };
const add = (map, key) => map.set(key, (map.get(key) ?? 0) + 1);
const perFile = [];
/** The test files each engine's report holds. */
const ran = new Map();

for (const file of files) {
  const r = JSON.parse(readFileSync(file, 'utf8'));
  const engine = engineOf(file);
  passed += r.numPassedTests;
  failed += r.numFailedTests + (r.numRuntimeErrorTestSuites ?? 0);
  const suites = r.testResults ?? [];
  perFile.push(`${file}: ${r.numPassedTests} passed, ${r.numFailedTests} failed, in ${suites.length} files`);
  ran.set(engine, new Set([...(ran.get(engine) ?? []), ...suites.map((s) => s.name)]));
  for (const suite of suites) {
    if (suite.status === 'failed' && (suite.assertionResults ?? []).every((t) => t.status !== 'failed')) {
      failures.push(`${file}: ${suite.name} (the file failed to run)\n    ${firstLines(suite.message)}`);
    }
    for (const t of suite.assertionResults ?? []) {
      if (t.status === 'failed') {
        failures.push(
          `${file}: ${suite.name} > ${t.fullName}\n    ${firstLines((t.failureMessages ?? []).join('\n'))}`,
        );
      }
      if (!['skipped', 'pending', 'todo'].includes(t.status)) continue;
      const name = t.fullName ?? t.title ?? '';
      const na = NOT_APPLICABLE.exec(name);
      const need = NEEDS.exec(name);
      if (na) add(skips.notApplicable, `on ${na[1] ?? engine}: ${na[2]}`);
      else if (need) add(skips.missing, `${engine}: ${need[1]}${need[2] ? ` (${need[2]})` : ''}`);
      else add(skips.unexplained, `${engine}: ${suite.name.replace(`${process.cwd()}/`, '')} > ${name}`);
    }
  }
}
// A CI run tests both engines: a report that is not there is a service that was missing.
if (ci) {
  const present = files.map(engineOf);
  for (const engine of ENGINES)
    if (!present.includes(engine)) add(skips.missing, `${engine}: no report (the run did not happen)`);
}
// A file that can tell the engines apart runs on both: one the PostgreSQL pass left out went untested.
let once = 0;
if (ran.has('pglite') && ran.has('postgres')) {
  const onPostgres = ran.get('postgres');
  for (const [file, c] of classifyTestFiles(ROOT, [...ran.get('pglite')])) {
    if (!c.bound) once += onPostgres.has(file) ? 0 : 1;
    else if (!onPostgres.has(file))
      add(skips.missing, `postgres: ${relative(ROOT, file)} did not run (${c.why})`);
  }
}

const total = (map) => [...map.values()].reduce((a, b) => a + b, 0);
const [notApplicable, missing, unexplained] = [skips.notApplicable, skips.missing, skips.unexplained].map(
  total,
);
const listed = (map) =>
  [...map]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([why, n]) => `  ${n} ${why}`)
    .join('\n');

if (notApplicable > 0) console.log(`skipped as not applicable:\n${listed(skips.notApplicable)}`);
if (missing > 0) console.log(`SKIPPED FOR A MISSING SERVICE:\n${listed(skips.missing)}`);
if (unexplained > 0)
  console.log(`SKIPPED WITHOUT SAYING WHY (use test/skips.ts):\n${listed(skips.unexplained)}`);
for (const f of failures) console.log(`FAILED ${f}`);
for (const line of perFile) console.log(line);
if (once > 0) console.log(`(${once} files that cannot tell the engines apart ran on pglite only)`);
const refused = ci && missing + unexplained > 0;
if (refused)
  console.log(
    'CI: every test must run here; a skip for a missing service (or one without a reason) fails the run',
  );
const skipped = notApplicable + missing + unexplained;
const why = [`${notApplicable} not applicable`, `${missing} for a missing service`];
if (unexplained > 0) why.push(`${unexplained} without a reason`);
console.log(`tests: ${passed} passed, ${failed} failed, ${skipped} skipped (${why.join(', ')})`);
process.exit(failed > 0 || passed === 0 || refused ? 1 : 0);

/** The engine a report is of, from its file name (test.sh writes pglite.json and postgres.json). */
function engineOf(file) {
  return ENGINES.find((e) => basename(file).includes(e)) ?? basename(file, '.json');
}

function firstLines(text) {
  return String(text ?? '')
    .split('\n')
    .slice(0, 6)
    .join('\n    ');
}
