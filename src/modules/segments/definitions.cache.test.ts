import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestService, type TestService, type TestWorkspace } from '../../../test/harness';
import { workspaceDefinitions } from './definitions.cache';
import * as repo from './segments.repo';

let svc: TestService;
let ws: TestWorkspace;

beforeAll(async () => {
  svc = await startTestService();
  ws = await svc.newWorkspace('definitions');
});
afterAll(() => svc.close());

const db = () => svc.rt.deps.db;
const save = async (name: string, query: unknown) => {
  const res = await svc.call('POST', '/tenant/segments', { key: ws.adminKey, body: { name, query } });
  expect(res.status).toBe(200);
  return res.body.data.id as string;
};
const ids = async () => (await workspaceDefinitions(db(), ws.id)).defs.map((d) => d.id);

describe("a workspace's segment definitions, kept between transactions", () => {
  it('reads every definition once, then only the version row while nothing changes', async () => {
    await save('has email', { field: 'email', op: 'exists' });
    await workspaceDefinitions(db(), ws.id);
    const query = vi.spyOn(db(), 'query');
    try {
      const again = await workspaceDefinitions(db(), ws.id);
      expect(again.defs).toHaveLength(1);
      expect(query).toHaveBeenCalledTimes(1);
      expect(query.mock.calls[0]![0]).toMatch(/FROM segment_definition_versions/);
    } finally {
      query.mockRestore();
    }
  });

  it('sees a saved, a changed and a deleted segment at its next use, and a rename as no change', async () => {
    const id = await save('spenders', { field: 'total_spend', op: 'gte', value: 10 });
    const saved = await workspaceDefinitions(db(), ws.id);
    expect(saved.segments.get(id)).toMatchObject({ value: 10 });

    await svc.call('PATCH', `/tenant/segments/${id}`, { key: ws.adminKey, body: { name: 'big spenders' } });
    expect((await workspaceDefinitions(db(), ws.id)).version).toBe(saved.version);

    await svc.call('PATCH', `/tenant/segments/${id}`, {
      key: ws.adminKey,
      body: { query: { field: 'total_spend', op: 'gte', value: 99 } },
    });
    const changed = await workspaceDefinitions(db(), ws.id);
    expect(changed.version).not.toBe(saved.version);
    expect(changed.segments.get(id)).toMatchObject({ value: 99 });

    expect((await svc.call('DELETE', `/tenant/segments/${id}`, { key: ws.adminKey })).status).toBe(200);
    expect(await ids()).not.toContain(id);
  });

  it('never takes definitions read in a transaction that rolled back for those of a later version', async () => {
    await expect(
      db().transaction(async (tx) => {
        await repo.insertSegment(tx, {
          id: 'seg_rolled_back',
          workspaceId: ws.id,
          name: 'never committed',
          description: null,
          query: { field: 'email', op: 'exists' },
          refs: [],
          timed: false,
        });
        // Read (and kept) inside the transaction, with the write it has not committed.
        expect((await workspaceDefinitions(tx, ws.id)).defs.map((d) => d.id)).toContain('seg_rolled_back');
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    // The next committed write must not look like the version read above (written straight to the
    // table: nothing reads the definitions in between).
    await db().transaction((tx) =>
      repo.insertSegment(tx, {
        id: 'seg_committed',
        workspaceId: ws.id,
        name: 'committed',
        description: null,
        query: { field: 'email', op: 'exists' },
        refs: [],
        timed: false,
      }),
    );
    const now = await ids();
    expect(now).toContain('seg_committed');
    expect(now).not.toContain('seg_rolled_back');
  });
});
