import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService, uuidOf as uuid } from '../../../test/harness';
import { movedRowsFrom, movesParams } from './moves';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc?.close());

describe('moving rows from merged-away profiles', () => {
  it('finds the rows to move through the index, one probe per move, in a table the planner has no statistics of', async () => {
    const db = svc.rt.deps.db;
    // Never analyzed, like events and lineage on a server without autovacuum.
    await db.query('CREATE TABLE move_probe (seq int PRIMARY KEY, profile_id uuid NOT NULL)');
    try {
      await db.query('CREATE INDEX move_probe_profile_idx ON move_probe (profile_id)');
      await db.query(
        `INSERT INTO move_probe SELECT i, ('00000000-0000-4000-8000-' || lpad((i % 5000)::text, 12, '0'))::uuid
           FROM generate_series(1, 50000) i`,
      );
      const moves = [1, 2, 3].map((n) => ({ from: uuid(n), to: uuid(9000 + n) }));
      const sql = `UPDATE move_probe t SET profile_id = x.to_id
                     FROM ${movedRowsFrom(1, 'move_probe', 'seq', 'profile_id')} WHERE t.seq = x.key`;
      const { rows: plan } = await db.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`, movesParams(moves));
      const text = plan.map((r) => r['QUERY PLAN']).join('\n');
      // The moves reach the table through its index (a plain join was hashed over a sequential scan
      // of it). The outer join back by primary key is the planner's choice: on a table this small a
      // hash is cheap; on the log at 1M events it probes (docs/benchmarks.md).
      expect(text).toMatch(/Subquery Scan on r[\s\S]*Index Scan[^\n]* on move_probe_profile_idx/);
      // (the probe's scan has no alias; the UPDATE's target is `t`)
      expect(text).not.toMatch(/Seq Scan on move_probe\s+\(/);

      await db.query(sql, movesParams(moves));
      const { rows } = await db.query<{ profile_id: string; n: number }>(
        `SELECT profile_id, count(*)::int AS n FROM move_probe
          WHERE profile_id = ANY($1::uuid[]) GROUP BY profile_id ORDER BY profile_id`,
        [[...moves.map((m) => m.from), ...moves.map((m) => m.to)]],
      );
      // Each merged-away profile had 10 rows; all of them moved, nothing else did.
      expect(rows).toEqual(moves.map((m) => ({ profile_id: m.to, n: 10 })));
    } finally {
      await db.query('DROP TABLE move_probe');
    }
  });
});
