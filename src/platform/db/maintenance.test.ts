import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../../../test/harness';
import { analyzeTables } from './maintenance';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc?.close());

describe('analyzing tables', () => {
  it('gives the planner the real size of a table that grew since it was created', async () => {
    const db = svc.rt.deps.db;
    await db.query('CREATE TABLE analyze_probe (id int PRIMARY KEY, v text)');
    try {
      await db.query("INSERT INTO analyze_probe SELECT i, 'v' || i FROM generate_series(1, 5000) i");
      const ms = await analyzeTables(db, ['analyze_probe']);
      expect(ms).toHaveLength(1);
      const { rows } = await db.query<{ n: number }>(
        "SELECT reltuples::int AS n FROM pg_class WHERE relname = 'analyze_probe' AND relnamespace = current_schema()::regnamespace",
      );
      expect(rows[0]!.n).toBe(5000);
    } finally {
      await db.query('DROP TABLE analyze_probe');
    }
  });
});
