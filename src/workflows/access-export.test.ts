import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../../test/expect-error';
import { ENGINE, startTestService, type TestService } from '../../test/harness';
import { waitProcessed } from '../modules/processing/processing.test-kit';
import { PERSONAL_DATA } from '../personal-data';

/**
 * GET /tenant/profiles/{id}/export: everything held about one person, one JSON document, each
 * registered owner's section in it (docs/profiles.md, "Access and portability export").
 */
let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc?.close());

const ingest = async (body: unknown) => {
  const res = await svc.call('POST', '/tenant/ingest/batch', { body });
  expect(res.status, res.text).toBe(202);
  await waitProcessed(svc.rt.deps.db);
};

describe(`the access export (${ENGINE})`, () => {
  it('holds the profile and every section the registry lists, with what each holds of the person', async () => {
    const email = `ada.${randomUUID()}@example.com`;
    const anon = randomUUID();
    await svc.call('POST', '/tenant/segments', {
      body: { name: `spenders ${email}`, query: { field: 'total_spend', op: 'gt', value: 0 } },
    });
    await ingest([
      { anonymous_id: anon, event_type: 'page', event_name: 'Home', payload: { ref: 'ad' } },
      {
        identity: email,
        anonymous_id: anon,
        event_type: 'identify',
        event_name: 'Signed Up',
        payload: { first_name: 'Ada', plan: 'pro' },
      },
      {
        identity: email,
        event_type: 'order',
        event_name: 'Order Completed',
        payload: { order_id: `o-${email}`, total: 12.5 },
      },
      { identity: email, event_type: 'track', event_name: 'Group', payload: { group_id: `acct-${email}` } },
    ]);
    const id = (await svc.call('GET', `/tenant/profiles?identity=${encodeURIComponent(email)}`)).body.data[0]
      .id;

    const res = await svc.call('GET', `/tenant/profiles/${id}/export`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['content-disposition']).toBe(`attachment; filename="profile-${id}.json"`);
    const doc = JSON.parse(res.text);
    const sections = PERSONAL_DATA.owners.flatMap((o) => (o.sections ?? []).map((s) => s.name));
    expect(Object.keys(doc).sort()).toEqual(['export', ...sections].sort());
    expect(doc.export).toMatchObject({ format: 'cdp.access-export.v1', profile_id: id });
    expect(doc.profile).toMatchObject({ id, email, first_name: 'Ada', attributes: { plan: 'pro' } });
    expect(doc.identifiers.map((i: { value: string }) => i.value).sort()).toEqual([anon, email].sort());
    expect(doc.events.map((e: { event_name: string }) => e.event_name)).toEqual([
      'Home',
      'Signed Up',
      'Order Completed',
      'Group',
    ]);
    expect(doc.events[0]).toMatchObject({ payload: { ref: 'ad' }, profile_id: id });
    expect(doc.orders).toEqual([expect.objectContaining({ order_id: `o-${email}`, total: 12.5 })]);
    expect(doc.lineage.map((l: { path: string }) => l.path)).toEqual(
      expect.arrayContaining(['/first_name', '/attributes/plan']),
    );
    expect(doc.accounts).toEqual([expect.objectContaining({ account_id: `acct-${email}` })]);
    expect(doc.facts.map((f: { type: string }) => f.type)).toEqual(
      expect.arrayContaining(['profile.created', 'order.completed']),
    );
    expect(doc.unapplied_events).toEqual([]);
  });

  it('answers the survivor for a merged-away id, and 404 for an unknown or another workspace’s one', async () => {
    const a = (await svc.call('POST', '/tenant/profiles', { body: { identity: `a-${randomUUID()}` } })).body
      .data;
    const b = (await svc.call('POST', '/tenant/profiles', { body: { identity: `b-${randomUUID()}` } })).body
      .data;
    await svc.call('POST', '/identity/merge', {
      body: { primary_profile_id: a.id, secondary_profile_ids: [b.id] },
    });
    const doc = JSON.parse((await svc.call('GET', `/tenant/profiles/${b.id}/export`)).text);
    expect(doc.profile).toMatchObject({ id: a.id, merged_profile_ids: [b.id] });
    expect(doc.identifiers).toHaveLength(2);
    expectError(await svc.call('GET', `/tenant/profiles/${randomUUID()}/export`), 404, 'NOT_FOUND');
    const other = await svc.newWorkspace();
    expectError(
      await svc.call('GET', `/tenant/profiles/${a.id}/export`, { key: other.adminKey }),
      404,
      'NOT_FOUND',
    );
  });

  it('is for admins only', async () => {
    const editor = await svc.ws.key(['editor']);
    const p = (await svc.call('POST', '/tenant/profiles', { body: { identity: `c-${randomUUID()}` } })).body
      .data;
    expectError(
      await svc.call('GET', `/tenant/profiles/${p.id}/export`, { key: editor }),
      403,
      'INSUFFICIENT_SCOPE',
    );
  });

  it('carries a long history whole, written page by page', async () => {
    const email = `long.${randomUUID()}@example.com`;
    const n = 2_600;
    for (let i = 0; i < n; i += 1_000) {
      await ingest(
        Array.from({ length: Math.min(1_000, n - i) }, (_, j) => ({
          identity: email,
          event_type: 'track',
          event_name: 'Step',
          payload: { i: i + j },
          timestamp: new Date(Date.UTC(2026, 0, 1) + (i + j) * 1_000).toISOString(),
        })),
      );
    }
    const id = (await svc.call('GET', `/tenant/profiles?identity=${encodeURIComponent(email)}`)).body.data[0]
      .id;
    const doc = JSON.parse((await svc.call('GET', `/tenant/profiles/${id}/export`)).text);
    expect(doc.events).toHaveLength(n);
    expect(doc.events.map((e: { payload: { i: number } }) => e.payload.i)).toEqual(
      Array.from({ length: n }, (_, i) => i),
    );
  }, 60_000);
});
