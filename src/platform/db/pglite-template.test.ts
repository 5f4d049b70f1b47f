import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OpenEvent } from './open-progress';
import { createPgliteDb, dumpMigratedDatabase } from './pglite';

/** PGLITE_TEMPLATE: a new embedded database starts from a dump; an existing one ignores it. */
describe('an embedded database made from a template', () => {
  let dir: string;
  let template: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'cdp-template-test-'));
    template = join(dir, 'template.tar');
    await dumpMigratedDatabase(template, async (db) => {
      await db.exec(
        "CREATE TABLE made_by_the_template (v text); INSERT INTO made_by_the_template VALUES ('hello')",
      );
    });
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const read = async (db: Awaited<ReturnType<typeof createPgliteDb>>) =>
    (await db.query<{ v: string }>('SELECT v FROM made_by_the_template')).rows.map((r) => r.v);

  it('holds what the template held, in memory, on the worker thread', async () => {
    const db = await createPgliteDb({ dataDir: null, template });
    try {
      expect(await read(db)).toEqual(['hello']);
    } finally {
      await db.close();
    }
  });

  it('starts a new data directory from it without initdb, and the directory keeps it across a restart', async () => {
    const dataDir = join(dir, 'data');
    const steps: OpenEvent[] = [];
    const first = await createPgliteDb({
      dataDir,
      inProcess: true,
      template,
      onProgress: (e) => steps.push(e),
    });
    try {
      expect(steps.map((s) => s.step)).toEqual(['creating', 'created', 'opened']);
      await first.exec("INSERT INTO made_by_the_template VALUES ('kept')");
    } finally {
      await first.close();
    }
    expect(existsSync(join(dataDir, 'PG_VERSION'))).toBe(true);
    // An existing cluster ignores the template: what it holds is what it had.
    const again = await createPgliteDb({ dataDir, inProcess: true, template });
    try {
      expect(await read(again)).toEqual(['hello', 'kept']);
    } finally {
      await again.close();
    }
  });
});
