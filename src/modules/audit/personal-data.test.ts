import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINE, startTestService, type TestService, type TestWorkspace } from '../../../test/harness';
import type { DataSubject } from '../../platform/personal-data';
import { auditPersonalData } from './personal-data';

/** The audit trail's personal data (src/platform/personal-data.ts): scrubbed at erasure, exported, swept. */
let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc?.close());

const subjectOf = (ws: TestWorkspace, profileIds: string[]): DataSubject => ({
  workspaceId: ws.id,
  profileIds,
  identifiers: [],
});

async function upsert(ws: TestWorkspace, body: Record<string, unknown>): Promise<string> {
  const res = await svc.call('POST', '/tenant/profiles', { key: ws.adminKey, body });
  expect(res.status, res.text).toBe(200);
  return res.body.data.id;
}

const dump = async () => JSON.stringify((await svc.rt.deps.db.query('SELECT * FROM audit_log')).rows);

/** `n` entries written `daysAgo` days ago, straight into the table (as if a year had passed). */
async function oldEntries(workspaceId: string, n: number, daysAgo: number, targetId = 'x'): Promise<void> {
  await svc.rt.deps.db.query(
    `INSERT INTO audit_log (id, workspace_id, created_at, action, principal_type, target_type, target_id,
                            diff, request_id, status)
     SELECT 'aud_old_' || md5(random()::text) || '_' || i, $1,
            now() - make_interval(days => $3::int) + make_interval(secs => i),
            'profile.upsert', 'operator', 'profile', $4::text, '{"request":{}}'::jsonb, 'req_old', 200
       FROM generate_series(1, $2::int) AS i`,
    [workspaceId, n, daysAgo, targetId],
  );
}

describe(`erasure (${ENGINE})`, () => {
  it('scrubs the diffs of the entries about the erased profiles, and only theirs', async () => {
    const ws = await svc.newWorkspace('erase');
    const grace = await upsert(ws, { identity: 'grace@example.com', first_name: 'Grace' });
    await upsert(ws, { identity: 'grace@example.com', last_name: 'Hopper' });
    const merged = await upsert(ws, { identity: 'g.hopper@example.com', first_name: 'Amazing' });
    const alan = await upsert(ws, { identity: 'alan@example.com', first_name: 'Alan' });
    expect(await dump()).toContain('Hopper');

    const counts = await svc.rt.deps.db.transaction((tx) =>
      auditPersonalData.erase(tx, subjectOf(ws, [grace, merged])),
    );
    expect(counts).toEqual({ audit_log: 3 });

    const text = await dump();
    for (const value of ['grace@example.com', 'Grace', 'Hopper', 'g.hopper@example.com', 'Amazing']) {
      expect(text).not.toContain(value);
    }
    // Who did what, and when, stays; another person's entry is untouched.
    const { rows } = await svc.rt.deps.db.query<{ target_id: string; action: string; diff: unknown }>(
      `SELECT target_id, action, diff FROM audit_log WHERE workspace_id = $1 AND action = 'profile.upsert'
        ORDER BY created_at`,
      [ws.id],
    );
    expect(rows.map((r) => [r.target_id, r.diff])).toEqual([
      [grace, { erased: true }],
      [grace, { erased: true }],
      [merged, { erased: true }],
      [alan, { request: { body: { identity: 'alan@example.com', first_name: 'Alan' } } }],
    ]);
  });

  it('is idempotent', async () => {
    const ws = await svc.newWorkspace('erase-twice');
    const id = await upsert(ws, { identity: 'twice@example.com' });
    const erase = () => svc.rt.deps.db.transaction((tx) => auditPersonalData.erase(tx, subjectOf(ws, [id])));
    expect(await erase()).toEqual({ audit_log: 1 });
    expect(await erase()).toEqual({ audit_log: 0 });
  });

  it('leaves another workspace’s entries about the same id alone', async () => {
    const ws = await svc.newWorkspace('erase-mine');
    const theirs = await svc.newWorkspace('erase-theirs');
    await oldEntries(theirs.id, 1, 1, 'shared-id');
    await svc.rt.deps.db.transaction((tx) => auditPersonalData.erase(tx, subjectOf(ws, ['shared-id'])));
    const { rows } = await svc.rt.deps.db.query<{ diff: unknown }>(
      'SELECT diff FROM audit_log WHERE workspace_id = $1',
      [theirs.id],
    );
    expect(rows.map((r) => r.diff)).toEqual([{ request: {} }]);
  });
});

describe('the access export’s `audit` section', () => {
  const section = auditPersonalData.sections!.find((s) => s.name === 'audit')!;
  const collect = async (subject: DataSubject) => {
    const rows: Array<Record<string, unknown>> = [];
    for await (const r of section.rows(svc.rt.deps.db, subject)) rows.push(r as Record<string, unknown>);
    return rows;
  };

  it('carries what was done to the person’s profiles, oldest first, without who did it', async () => {
    const ws = await svc.newWorkspace('export');
    const id = await upsert(ws, { identity: 'ada@example.com', first_name: 'Ada' });
    await svc.call('DELETE', `/tenant/profiles/${id}`, { key: ws.adminKey });
    await upsert(ws, { identity: 'someone-else@example.com' });

    const rows = await collect(subjectOf(ws, [id]));
    expect(rows.map((r) => r.action)).toEqual(['profile.upsert', 'profile.erase']);
    expect(rows[0]).toEqual({
      id: expect.stringMatching(/^aud_/),
      time: expect.any(String),
      action: 'profile.upsert',
      target: { type: 'profile', id },
      status: 200,
      request_id: expect.stringMatching(/^req_/),
      diff: { request: { body: { identity: 'ada@example.com', first_name: 'Ada' } } },
    });
  });

  it('reads a long history page by page, every entry once', async () => {
    const ws = await svc.newWorkspace('export-long');
    await oldEntries(ws.id, 1203, 3, 'long-history');
    const rows = await collect(subjectOf(ws, ['long-history']));
    expect(rows).toHaveLength(1203);
    expect(new Set(rows.map((r) => r.id)).size).toBe(1203);
  });
});

describe('the retention sweep (`audit_days`)', () => {
  const sweep = auditPersonalData.sweeps!.find((s) => s.setting === 'audit_days')!;

  it('removes the workspace’s entries older than the cutoff in bounded batches, nothing newer, nobody else’s', async () => {
    const ws = await svc.newWorkspace('sweep');
    const neighbour = await svc.newWorkspace('sweep-neighbour');
    await oldEntries(ws.id, 250, 500);
    await oldEntries(ws.id, 5, 10);
    await oldEntries(neighbour.id, 20, 500);
    const cutoff = new Date(Date.now() - 400 * 86_400_000);

    const batches: number[] = [];
    for (;;) {
      const n = await sweep.sweep(svc.rt.deps.db, ws.id, cutoff, 100);
      batches.push(n);
      if (n < 100) break;
    }
    expect(batches).toEqual([100, 100, 50]);
    const count = async (workspaceId: string) =>
      (
        await svc.rt.deps.db.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM audit_log WHERE workspace_id = $1',
          [workspaceId],
        )
      ).rows[0]!.n;
    expect(await count(ws.id)).toBe(5);
    expect(await count(neighbour.id)).toBe(20);
    expect(sweep.tables).toEqual(['audit_log']);
  });
});

describe('the registration', () => {
  it('names its table, how long it is kept and where it is exported', () => {
    expect(auditPersonalData.module).toBe('audit');
    expect(auditPersonalData.tables).toEqual([
      expect.objectContaining({
        table: 'audit_log',
        kept: { setting: 'audit_days' },
        exported: { section: 'audit' },
      }),
    ]);
  });
});
