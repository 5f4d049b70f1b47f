import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PERSONAL_DATA } from '../src/personal-data';
import { ENGINE, startTestService, type TestService } from './harness';

/**
 * Personal data has an owner (src/personal-data.ts): every table of the schema is either registered
 * by the module that stores a person's data in it (how their rows are erased, exported and kept) or
 * declared free of personal data, with the reason. A new table that is neither fails here, on the
 * engine the suite runs on (PGlite, and PostgreSQL in the second run).
 */
let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc?.close());

const registered = PERSONAL_DATA.owners.flatMap((o) => o.tables.map((t) => ({ ...t, module: o.module })));

async function schemaTables(): Promise<string[]> {
  const { rows } = await svc.rt.deps.db.query<{ table_name: string }>(
    `SELECT table_name FROM information_schema.tables
      WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`,
  );
  return rows.map((r) => r.table_name);
}

describe(`the personal-data registry (${ENGINE})`, () => {
  it('names every table of the schema, as holding personal data or, with a reason, as holding none', async () => {
    const known = new Set([...registered.map((t) => t.table), ...PERSONAL_DATA.free.map((t) => t.table)]);
    const missing = (await schemaTables()).filter((t) => !known.has(t));
    expect(
      missing,
      `register these tables in their module's personal-data.ts, or declare them in PERSONAL_DATA.free with the reason`,
    ).toEqual([]);
  });

  it('names no table the schema does not have, and each table once', async () => {
    const tables = new Set(await schemaTables());
    const named = [...registered.map((t) => t.table), ...PERSONAL_DATA.free.map((t) => t.table)];
    expect(named.filter((t) => !tables.has(t))).toEqual([]);
    expect(named.filter((t, i) => named.indexOf(t) !== i)).toEqual([]);
  });

  it('gives every table free of personal data a reason', () => {
    for (const t of PERSONAL_DATA.free) expect(t.reason.length, t.table).toBeGreaterThan(10);
  });

  it('exports each registered table in a section some owner writes', () => {
    const sections = new Set(PERSONAL_DATA.owners.flatMap((o) => (o.sections ?? []).map((s) => s.name)));
    for (const t of registered) {
      if ('section' in t.exported)
        expect(sections.has(t.exported.section), `${t.table}: ${t.exported.section}`).toBe(true);
      else expect(t.exported.not.length, t.table).toBeGreaterThan(10);
    }
  });

  it('fails for a table that is neither registered nor declared (the check itself works)', async () => {
    const db = svc.rt.deps.db;
    await db.exec('CREATE TABLE zz_unregistered_probe (email text)');
    try {
      const known = new Set([...registered.map((t) => t.table), ...PERSONAL_DATA.free.map((t) => t.table)]);
      expect((await schemaTables()).filter((t) => !known.has(t))).toEqual(['zz_unregistered_probe']);
    } finally {
      await db.exec('DROP TABLE zz_unregistered_probe');
    }
  });
});

describe('docs/profiles.md, "What is kept about a person"', () => {
  it('names every registered table and every table declared free of personal data', async () => {
    const { readFileSync } = await import('node:fs');
    const doc = readFileSync(new URL('../docs/profiles.md', import.meta.url), 'utf8');
    const section = doc.slice(
      doc.indexOf('## What is kept about a person'),
      doc.indexOf('## Erasure and suppression'),
    );
    const named = [...registered.map((t) => t.table), ...PERSONAL_DATA.free.map((t) => t.table)];
    expect(named.filter((t) => !section.includes(`\`${t}\``))).toEqual([]);
  });
});
