import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * The module boundaries are enforced by the linter (biome.json overrides): these probes write a
 * file that breaks a rule into the tree, lint it alone, and remove it.
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
