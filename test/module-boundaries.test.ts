import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * The module boundaries. Imports of another module's repo and of modules from platform/ are refused
 * by the linter (biome.json overrides): the first probes write a file that breaks a rule into the
 * tree, lint it alone, and remove it. The layering (no module cycles, workflows above modules) is
 * checked here on the import graph of the production code.
 */
const ROOT = join(import.meta.dirname, '..');
const probes: string[] = [];

function lint(dir: string, source: string): { status: number | null; output: string } {
  const folder = join(ROOT, dir);
  mkdirSync(folder, { recursive: true });
  probes.push(folder);
  const file = join(folder, 'probe.ts');
  writeFileSync(file, source);
  const r = spawnSync(join(ROOT, 'node_modules/.bin/biome'), ['lint', file], { cwd: ROOT, encoding: 'utf8' });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

afterAll(() => {
  for (const p of probes) rmSync(p, { recursive: true, force: true });
});

describe('module boundaries', () => {
  it("refuses a module importing another module's repo", () => {
    const r = lint(
      `src/modules/zz-probe-${process.pid}`,
      "import { lockProfiles } from '../profiles/profiles.repo';\n\nexport const probe = lockProfiles;\n",
    );
    expect(r.status).not.toBe(0);
    expect(r.output).toContain('noRestrictedImports');
  });

  it("accepts the same function through the module's index", () => {
    const r = lint(
      `src/modules/zz-probe-ok-${process.pid}`,
      "import { lockProfiles } from '../profiles';\n\nexport const probe = lockProfiles;\n",
    );
    expect(r.output).not.toContain('noRestrictedImports');
    expect(r.status).toBe(0);
  });

  it('refuses platform code importing from a module', () => {
    const r = lint(
      `src/platform/zz-probe-${process.pid}`,
      "import { lockProfiles } from '../../modules/profiles';\n\nexport const probe = lockProfiles;\n",
    );
    expect(r.status).not.toBe(0);
    expect(r.output).toContain('noRestrictedImports');
  });
});

/** The unit a source file belongs to: `modules/<name>`, `workflows`, `platform`, or `root` (src/*.ts). */
function unitOf(file: string): string {
  const rel = relative(join(ROOT, 'src'), file).split('/');
  if (rel[0] === 'modules') return `modules/${rel[1]}`;
  const top = rel[0]!.replace(/\.ts$/, '');
  // The config schema is read by platform and modules alike: it counts as platform.
  if (top === 'config') return 'platform';
  if (top === 'workflows' || top === 'platform') return top;
  return rel.length === 1 ? 'root' : top;
}

/** Production files only: tests and their kits may reach across (they start whole services). */
function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'fixtures' ? [] : sourceFiles(p);
    return /\.ts$/.test(e.name) && !/\.test(-kit)?\.ts$/.test(e.name) ? [p] : [];
  });
}

/** unit → unit → the first file seen making that import (for the message). */
function importGraph(files: readonly string[]): Map<string, Map<string, string>> {
  const graph = new Map<string, Map<string, string>>();
  for (const file of files) {
    const from = unitOf(file);
    const edges = graph.get(from) ?? new Map<string, string>();
    graph.set(from, edges);
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)) {
      const to = unitOf(resolve(dirname(file), m[1]!));
      if (to !== from && !edges.has(to)) edges.set(to, relative(ROOT, file));
    }
  }
  return graph;
}

/** Every cycle's units (Tarjan's strongly connected components of more than one unit). */
function cycles(graph: Map<string, Map<string, string>>): string[][] {
  let index = 0;
  const stack: string[] = [];
  const meta = new Map<string, { index: number; low: number; onStack: boolean }>();
  const found: string[][] = [];
  const visit = (v: string) => {
    meta.set(v, { index, low: index, onStack: true });
    index++;
    stack.push(v);
    for (const w of graph.get(v)?.keys() ?? []) {
      if (!meta.has(w)) {
        visit(w);
        meta.get(v)!.low = Math.min(meta.get(v)!.low, meta.get(w)!.low);
      } else if (meta.get(w)!.onStack) meta.get(v)!.low = Math.min(meta.get(v)!.low, meta.get(w)!.index);
    }
    if (meta.get(v)!.low === meta.get(v)!.index) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        meta.get(w)!.onStack = false;
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1) found.push(scc.sort());
    }
  };
  for (const v of graph.keys()) if (!meta.has(v)) visit(v);
  return found;
}

const describeCycle = (graph: Map<string, Map<string, string>>, scc: string[]): string =>
  scc
    .flatMap((a) =>
      [...(graph.get(a) ?? [])].filter(([b]) => scc.includes(b)).map(([b, file]) => `${a} → ${b} (${file})`),
    )
    .join('\n');

describe('the layering of the production code', () => {
  const graph = importGraph(sourceFiles(join(ROOT, 'src')));

  it('has no import cycle between modules, workflows and platform', () => {
    const found = cycles(graph);
    expect(found.map((scc) => describeCycle(graph, scc)).join('\n\n')).toBe('');
  });

  it('finds a cycle when there is one (the check itself works)', () => {
    const probe = new Map([
      ['modules/a', new Map([['modules/b', 'a.ts']])],
      ['modules/b', new Map([['modules/c', 'b.ts']])],
      ['modules/c', new Map([['modules/a', 'c.ts']])],
      ['modules/d', new Map([['modules/a', 'd.ts']])],
    ]);
    expect(cycles(probe)).toEqual([['modules/a', 'modules/b', 'modules/c']]);
  });

  it('lets only the entry points import workflows: the composition root and the event pipeline', () => {
    const importers = [...graph].filter(([, to]) => to.has('workflows')).map(([from]) => from);
    expect(importers.sort()).toEqual(['modules/processing', 'root'].filter((u) => importers.includes(u)));
  });

  it('keeps modules and workflows off the composition root (app, runtime, worker, cli)', () => {
    const offenders = [...graph]
      .filter(([from, to]) => from !== 'root' && to.has('root'))
      .map(([from, to]) => `${from} (${to.get('root')})`);
    expect(offenders).toEqual([]);
  });
});
