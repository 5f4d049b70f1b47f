import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../../../test/expect-error';
import { startTestService, type TestService } from '../../../test/harness';
import { SEGMENT_NAME_MAX } from './segments.schemas';
import { waitSegmentsSettled } from './segments.test-kit';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc?.close());

const VIP = { field: 'total_spend', op: 'gte', value: 100 };

async function save(body: Record<string, unknown>, key?: string) {
  return svc.call('POST', '/tenant/segments', { body, ...(key ? { key } : {}) });
}

async function saved(body: Record<string, unknown>): Promise<{ id: string } & Record<string, unknown>> {
  const res = await save(body);
  expect(res.status, res.text).toBe(200);
  return res.body.data;
}

describe('saving a segment', () => {
  it('answers the record with an id, no members yet being counted, and reads back the same', async () => {
    const s = await saved({ name: 'VIPs', description: 'spent 100 or more', query: VIP });
    expect(s).toMatchObject({
      name: 'VIPs',
      description: 'spent 100 or more',
      query: VIP,
      member_count: 0,
    });
    expect(s.id).toMatch(/^seg_[0-9a-z]{26}$/);
    await waitSegmentsSettled(svc.rt.deps.db);
    const read = await svc.call('GET', `/tenant/segments/${s.id}`);
    expect(read.body.data).toMatchObject({ id: s.id, membership_status: 'current', query: VIP });
  });

  it('refuses a bad query with each faulty node’s JSON pointer under /query', async () => {
    const res = await save({ name: 'bad', query: { and: [VIP, { field: 'total_spend', op: 'near' }] } });
    expectError(res, 400, 'VALIDATION_ERROR');
    expect(res.body.details.map((d: { path: string }) => d.path)).toContain('/query/and/1/op');
  });

  it('refuses a missing query, an empty or too long name, and unknown fields', async () => {
    for (const body of [
      { name: 'no query' },
      { name: '', query: VIP },
      { name: 'x'.repeat(SEGMENT_NAME_MAX + 1), query: VIP },
      { name: 'extra', query: VIP, colour: 'red' },
    ]) {
      expectError(await save(body), 400, 'VALIDATION_ERROR');
    }
  });

  it('refuses a reference to a segment that does not exist', async () => {
    const res = await save({ name: 'ghost', query: { segment: 'seg_nope' } });
    expectError(res, 400, 'VALIDATION_ERROR');
    expect(res.body.details[0].path).toBe('/query');
    expect(res.body.message).toContain('seg_nope');
  });

  it('refuses a change that would make segments refer to each other in a cycle', async () => {
    const a = await saved({ name: 'A', query: VIP });
    const b = await saved({ name: 'B', query: { segment: a.id } });
    const res = await svc.call('PATCH', `/tenant/segments/${a.id}`, { body: { query: { segment: b.id } } });
    expectError(res, 400, 'VALIDATION_ERROR');
    expect(res.body.message).toContain('cycle');
    const self = await svc.call('PATCH', `/tenant/segments/${a.id}`, { body: { query: { segment: a.id } } });
    expectError(self, 400, 'VALIDATION_ERROR');
  });

  it('refuses a change that would make a segment referring to this one too big once inlined', async () => {
    const base = await saved({ name: 'small', query: VIP });
    await saved({ name: 'wide', query: { or: Array.from({ length: 15 }, () => ({ segment: base.id })) } });
    const big = {
      and: Array.from({ length: 70 }, (_, i) => ({ field: 'total_spend', op: 'gte', value: i })),
    };
    const res = await svc.call('PATCH', `/tenant/segments/${base.id}`, { body: { query: big } });
    expectError(res, 400, 'VALIDATION_ERROR');
    expect(res.body.message).toContain('refers to this one');
  });

  it('needs an editor: a viewer may read but not save', async () => {
    const viewer = await svc.ws.key(['viewer']);
    expectError(await save({ name: 'v', query: VIP }, viewer), 403, 'INSUFFICIENT_SCOPE');
    expect((await svc.call('GET', '/tenant/segments', { key: viewer })).status).toBe(200);
  });
});

describe('changing and deleting', () => {
  it('patches name and description without touching the query, and null clears the description', async () => {
    const s = await saved({ name: 'old', description: 'd', query: VIP });
    const res = await svc.call('PATCH', `/tenant/segments/${s.id}`, {
      body: { name: 'new', description: null },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data).toMatchObject({ name: 'new', description: null, query: VIP });
  });

  it('refuses to delete a segment another one refers to (409), then deletes it once free', async () => {
    const base = await saved({ name: 'base', query: VIP });
    const user = await saved({ name: 'user', query: { not: { segment: base.id } } });
    expectError(await svc.call('DELETE', `/tenant/segments/${base.id}`), 409, 'CONFLICT');
    expect((await svc.call('DELETE', `/tenant/segments/${user.id}`)).status).toBe(200);
    const gone = await svc.call('DELETE', `/tenant/segments/${base.id}`);
    expect(gone.body).toEqual({ status: 'success', data: { id: base.id, deleted: true } });
    expectError(await svc.call('GET', `/tenant/segments/${base.id}`), 404, 'NOT_FOUND');
  });

  it('answers 404 for another workspace’s segment on every route', async () => {
    const other = await svc.newWorkspace('segments-other');
    const res = await svc.call('POST', '/tenant/segments', {
      key: other.adminKey,
      body: { name: 'o', query: VIP },
    });
    const id = res.body.data.id;
    for (const [method, suffix, body] of [
      ['GET', '', undefined],
      ['GET', '/members', undefined],
      ['GET', '/changes', undefined],
      ['PATCH', '', { name: 'mine' }],
      ['DELETE', '', undefined],
    ] as const) {
      expectError(await svc.call(method, `/tenant/segments/${id}${suffix}`, { body }), 404, 'NOT_FOUND');
    }
    const ref = await save({ name: 'steal', query: { segment: id } });
    expectError(ref, 400, 'VALIDATION_ERROR');
  });
});

describe('listing', () => {
  it('pages segments oldest first with a cursor and never repeats one', async () => {
    const seen: string[] = [];
    const created: string[] = [];
    let cursor: string | null = null;
    do {
      const q: string = cursor ? `&cursor=${cursor}` : '';
      const res = await svc.call('GET', `/tenant/segments?limit=2${q}`);
      expect(res.status, res.text).toBe(200);
      seen.push(...res.body.data.map((s: { id: string }) => s.id));
      created.push(...res.body.data.map((s: { created_at: string }) => s.created_at));
      cursor = res.body.pagination.next_cursor;
    } while (cursor);
    expect(new Set(seen).size).toBe(seen.length);
    expect(created).toEqual([...created].sort());
    expect(seen.length).toBeGreaterThan(2);
  });

  it('lists nothing for a profile_id that names no profile', async () => {
    const res = await svc.call('GET', '/tenant/segments?profile_id=00000000-0000-4000-8000-000000000000');
    expect(res.body.data).toEqual([]);
  });
});
