// Adds up vitest JSON reports (one per engine) and prints the plain closing line CI reads:
// "tests: N passed, N failed, N skipped". Exits 1 when anything failed or nothing ran.
// Each failed test is named with the first lines of its failure, here at the very end, because
// CI keeps only the tail of a long log and a failure far above it would otherwise go unseen.
import { readFileSync } from 'node:fs';

let passed = 0;
let failed = 0;
let skipped = 0;
const failures = [];
for (const file of process.argv.slice(2)) {
  const r = JSON.parse(readFileSync(file, 'utf8'));
  passed += r.numPassedTests;
  failed += r.numFailedTests + (r.numRuntimeErrorTestSuites ?? 0);
  skipped += r.numPendingTests + r.numTodoTests;
  for (const suite of r.testResults ?? []) {
    if (suite.status === 'failed' && (suite.assertionResults ?? []).every((t) => t.status !== 'failed')) {
      failures.push(`${file}: ${suite.name} (the file failed to run)\n    ${firstLines(suite.message)}`);
    }
    for (const t of suite.assertionResults ?? []) {
      if (t.status !== 'failed') continue;
      failures.push(
        `${file}: ${suite.name} > ${t.fullName}\n    ${firstLines((t.failureMessages ?? []).join('\n'))}`,
      );
    }
  }
}
for (const f of failures) console.log(`FAILED ${f}`);
for (const file of process.argv.slice(2)) {
  const r = JSON.parse(readFileSync(file, 'utf8'));
  console.log(`${file}: ${r.numPassedTests} passed, ${r.numFailedTests} failed`);
}
console.log(`tests: ${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(failed > 0 || passed === 0 ? 1 : 0);

function firstLines(text) {
  return String(text ?? '')
    .split('\n')
    .slice(0, 6)
    .join('\n    ');
}
