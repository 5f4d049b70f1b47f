// Which test files can tell the two engines apart (docs/testing.md, "Two passes, one suite").
//
// `npm test` runs the suite on PGlite, then again with DATABASE_URL set. The second pass proves
// something only for a file whose run can depend on the engine: one that loads, at any depth, a
// module that reads DATABASE_URL (the harness, the config, the database layer) or Redis's address,
// hands the whole environment on (`process.env` as an object), starts a child process or a worker
// thread (which inherit it), or imports a database or Redis driver. Every other file — a parser, a
// model, a formatter of the console — would run the same code twice, so it runs once, in the PGlite
// pass.
//
// The answer is read from the sources, by following every import from the test file through the
// project's own modules (static, dynamic and `vi.mock` paths; type-only imports are erased at run
// time and skipped). It errs one way only: whatever it cannot follow (an import it cannot resolve,
// an `import()` of a computed path, `require`) counts as touching the engine, so a new database
// test can never drop out of the PostgreSQL pass; at worst a pure file runs twice.
// scripts/engine-files.test.ts checks the reading against esbuild's.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/** Text in a module that makes its importers engine-bound, each with the reason it gives. */
export const ENGINE_SIGNS = [
  [/DATABASE_URL/, 'reads DATABASE_URL'],
  [/REDIS_URL/, 'reads a Redis address'],
  [/process\.env(?![.[])/, 'passes the whole environment on'],
  [/process\.env\[(?!\s*['"])/, 'reads the environment by a computed name'],
  [/\brequire\s*\(/, 'loads a module with require (not followed)'],
  [/\bimport\s*\(\s*(?!['"])/, 'imports a computed path (not followed)'],
];

/** Packages (and node: modules) that reach an engine, Redis or another process. */
export const ENGINE_PACKAGES = new Map([
  ['pg', 'PostgreSQL driver'],
  ['@electric-sql/pglite', 'PGlite'],
  ['ioredis', 'Redis client'],
  ['child_process', 'starts a child process'],
  ['worker_threads', 'starts a worker thread'],
  ['cluster', 'starts a child process'],
]);

/** The suite's files, as vitest.config.ts includes them. */
export const TEST_ROOTS = ['src', 'test', 'web/src'];
const TEST_FILE = /\.test\.tsx?$/;

const IMPORTS = [
  // import x from '…', import { a, type B } from '…', export { a } from '…', export * from '…'
  /\b(import|export)\s+(?!type\s)[^'";]*?\bfrom\s*['"]([^'"]+)['"]/g,
  // import '…' (for its effects)
  /\b(import)\s*['"]([^'"]+)['"]/g,
  // import('…'), vi.mock('…'), vi.importActual('…')
  /\b(import|mock|importActual|doMock)\s*\(\s*['"]([^'"]+)['"]/g,
];
const EXTENSIONS = ['', '.ts', '.tsx', '.mts', '.js', '.mjs', '/index.ts', '/index.tsx', '/index.js'];

/** The package a bare specifier names: `node:fs/promises` → `fs`, `@a/b/c` → `@a/b`. */
function packageOf(spec) {
  const bare = spec.replace(/^node:/, '');
  const parts = bare.split('/');
  return bare.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

function resolveRelative(from, spec) {
  const base = resolve(dirname(from), spec);
  // TypeScript sources are imported as .js in some places: try the .ts beside it.
  const candidates = [...EXTENSIONS.map((e) => base + e), base.replace(/\.m?js$/, '.ts')];
  return candidates.find((c) => existsSync(c) && statSync(c).isFile()) ?? null;
}

/** The reasons one module (not its imports) touches an engine, and what it imports. */
function readModule(file) {
  if (!existsSync(file)) return { reasons: ['could not be read'], imports: [] };
  const text = readFileSync(file, 'utf8');
  const reasons = [];
  if (!/\.(m?[jt]sx?)$/.test(file)) return { reasons, imports: [] }; // data (.sql, .json, .css)
  for (const [sign, why] of ENGINE_SIGNS) if (sign.test(text)) reasons.push(why);
  const imports = [];
  for (const pattern of IMPORTS) {
    for (const m of text.matchAll(pattern)) {
      const spec = m[2];
      if (spec.startsWith('.') || spec.startsWith('/')) {
        const target = resolveRelative(file, spec);
        if (target) imports.push(target);
        else reasons.push(`imports ${spec}, which could not be found`);
      } else {
        const why = ENGINE_PACKAGES.get(packageOf(spec));
        if (why) reasons.push(`imports ${spec} (${why})`);
      }
    }
  }
  return { reasons, imports };
}

/**
 * For each test file under `root`, whether it is engine-bound and why: the first module found on
 * its import path that touches an engine, with the chain that leads there.
 * @returns {Map<string, { bound: boolean, why: string | null }>} keyed by path relative to root
 */
export function classifyTestFiles(root = process.cwd(), files = listTestFiles(root)) {
  const modules = new Map();
  const read = (f) => {
    if (!modules.has(f)) modules.set(f, readModule(f));
    return modules.get(f);
  };
  const out = new Map();
  for (const rel of files) {
    const start = resolve(root, rel);
    // Breadth first, so the reason given is the nearest one.
    const via = new Map([[start, null]]);
    const queue = [start];
    let why = null;
    while (queue.length > 0 && why === null) {
      const f = queue.shift();
      const mod = read(f);
      if (mod.reasons.length > 0) {
        const chain = [];
        for (let x = f; x !== null; x = via.get(x)) chain.unshift(relative(root, x));
        why = `${chain.join(' → ')}: ${mod.reasons[0]}`;
        break;
      }
      for (const i of mod.imports) {
        if (!via.has(i)) {
          via.set(i, f);
          queue.push(i);
        }
      }
    }
    out.set(rel, { bound: why !== null, why, reached: why === null ? [...via.keys()] : null });
  }
  return out;
}

/** Every test file of the suite, relative to root, sorted. */
export function listTestFiles(root = process.cwd()) {
  const found = [];
  const walk = (dir) => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      if (entry.name === 'node_modules' || entry.name.startsWith('.')) continue;
      const rel = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(rel);
      else if (TEST_FILE.test(entry.name)) found.push(rel);
    }
  };
  for (const dir of TEST_ROOTS) if (existsSync(join(root, dir))) walk(dir);
  return found.sort();
}

/** The two lists vitest.config.ts makes its projects of. */
export function engineSplit(root = process.cwd()) {
  const bound = [];
  const free = [];
  for (const [file, c] of classifyTestFiles(root)) (c.bound ? bound : free).push(file);
  return { bound, free };
}

// `node scripts/engine-files.mjs` prints the classification with its reasons.
if (import.meta.url === `file://${process.argv[1]}`) {
  const all = classifyTestFiles();
  for (const [file, c] of all)
    console.log(`${c.bound ? 'both engines' : 'once        '}  ${file}${c.why ? `  (${c.why})` : ''}`);
  const bound = [...all.values()].filter((c) => c.bound).length;
  console.log(`${bound} files run on both engines, ${all.size - bound} once`);
}
