// Adds up vitest JSON reports (one per engine: .test-results/<engine>.json) and prints the plain
// closing line CI reads: "tests: N passed, N failed, N skipped (N not applicable, N for a missing
// service)". Exits 1 when anything failed or nothing ran.
//
// Each skip is told by the marker test/skips.ts puts in a skipped test's name (docs/testing.md):
// `[not applicable on pglite: why]` or `[not applicable: why]` (the case does not exist there), or
// `[needs redis: …]` (the environment lacks something). Under CI=true a skip for a missing service,
// a skip that does not say why, or a missing engine's report fails the run: CI must test everything.
//
// Each failed test is named with the first lines of its failure, here at the very end, because
// CI keeps only the tail of a long log and a failure far above it would otherwise go unseen.
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';

const NOT_APPLICABLE = /\[not applicable(?: on (\w+))?: ([^\]]*)\]/;
const NEEDS = /\[needs ([^\]:]+)(?:: ([^\]]*))?\]/;
const ENGINES = ['pglite', 'postgres'];
const ci = process.env.CI === 'true';

const files = process.argv.slice(2);
let passed = 0;
let failed = 0;
const failures = [];
/** Skips by kind, then by "engine: reason", counted. */
const skips = { notApplicable: new Map(), missing: new Map(), unexplained: new Map() };
const add = (map, key) => map.set(key, (map.get(key) ?? 0) + 1);
const perFile = [];

for (const file of files) {
  const r = JSON.parse(readFileSync(file, 'utf8'));
  const engine = engineOf(file);
  passed += r.numPassedTests;
  failed += r.numFailedTests + (r.numRuntimeErrorTestSuites ?? 0);
  perFile.push(`${file}: ${r.numPassedTests} passed, ${r.numFailedTests} failed`);
  for (const suite of r.testResults ?? []) {
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
