import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService, uuidOf as uuid } from '../../../test/harness';
import { type ProfileWrite, upsertProfiles } from './profiles.repo';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc?.close());

describe('profile rows on disk', () => {
  it('keep room on their page, so a trait write updates the row in place (migration 0024)', async () => {
    const db = svc.rt.deps.db;
    const row = (n: number, visits: number): ProfileWrite => ({
      id: uuid(n),
      workspace_id: svc.ws.id,
      email: `user${n}@example.com`,
      first_name: `User${n}`,
      last_name: null,
      attributes: { plan: 'pro', visits, last_page: `/pages/${'x'.repeat(100)}` },
      field_times: { '/attributes/plan': 1, '/attributes/visits': 2, '/attributes/last_page': 3 },
      merged_into: null,
      created_at: new Date(0).toISOString(),
    });
    // Enough rows to fill several pages: on full pages the first page has no room left.
    await upsertProfiles(
      db,
      Array.from({ length: 200 }, (_, n) => row(n, 1)),
    );
    const pageOf = async (ids: string[]) => {
      const { rows } = await db.query<{ id: string; page: string }>(
        `SELECT id, (ctid::text::point)[0]::int::text AS page FROM profiles WHERE id = ANY($1::uuid[]) ORDER BY id`,
        [ids],
      );
      return rows;
    };
    const { rows: first } = await db.query<{ id: string }>(
      `SELECT id FROM profiles WHERE workspace_id = $1 AND (ctid::text::point)[0] = 0 ORDER BY id LIMIT 3`,
      [svc.ws.id],
    );
    expect(first).toHaveLength(3);
    const ids = first.map((r) => r.id);
    const before = await pageOf(ids);

    // The pipeline's write path: the same row, one attribute changed.
    await upsertProfiles(
      db,
      ids.map((id) => row(Number(id.slice(-12)), 2)),
    );

    // A new version on another page would have meant a new entry in every index of the table.
    expect(await pageOf(ids)).toEqual(before);
    const { rows: changed } = await db.query<{ visits: number }>(
      `SELECT (attributes->>'visits')::int AS visits FROM profiles WHERE id = ANY($1::uuid[])`,
      [ids],
    );
    expect(changed.map((r) => r.visits)).toEqual([2, 2, 2]);
  });
});
