import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../../../test/harness';
import { insertTestEvents, waitProcessed } from '../processing/processing.test-kit';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc?.close());

const create = async (body: Record<string, unknown>) =>
  (await svc.call('POST', '/tenant/profiles', { body })).body.data as { id: string };
const merge = (primary: string, secondaries: string[]) =>
  svc.call('POST', '/identity/merge', {
    body: { primary_profile_id: primary, secondary_profile_ids: secondaries },
  });

describe('POST /identity/merge', () => {
  it('merges profiles into the primary, even with different e-mails, and the old ids keep resolving', async () => {
    const p = await create({ email: 'main@example.com', first_name: 'Main', attributes: { a: 1 } });
    const s1 = await create({ email: 'alt@example.com', last_name: 'Alt', attributes: { b: 2 } });
    const s2 = await create({ identity: 'crm-77' });
    const res = await merge(p.id, [s1.id, s2.id]);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ primary_profile_id: p.id, merged_profile_ids: [s1.id, s2.id] });
    expect(res.body.data.profile).toMatchObject({
      first_name: 'Main',
      last_name: 'Alt',
      attributes: { a: 1, b: 2 },
    });
    expect(res.body.data.profile.identities).toHaveLength(3);

    for (const old of [s1.id, s2.id])
      expect((await svc.call('GET', `/tenant/profiles/${old}`)).body.data.id).toBe(p.id);
    const facts = await svc.rt.deps.db.query<{ data: unknown }>(
      "SELECT data FROM outbox WHERE type = 'profile.merged' ORDER BY seq DESC LIMIT 1",
    );
    expect(facts.rows[0]!.data).toMatchObject({
      primary_profile_id: p.id,
      merged_profile_ids: [s1.id, s2.id],
    });
    // Scalars merge newer-wins: the secondary's e-mail was written later, so the survivor shows it.
    const list = (await svc.call('GET', '/tenant/profiles?email=alt@example.com')).body.data;
    expect(list.map((x: { id: string }) => x.id)).toEqual([p.id]);
    expect((await svc.call('GET', '/tenant/profiles?identity=alt@example.com')).body.data[0].id).toBe(p.id);

    // Merging again is a no-op; a merged-away id as primary means its survivor.
    const again = await merge(s1.id, [p.id]);
    expect(again.status).toBe(200);
    expect(again.body.data).toMatchObject({ primary_profile_id: p.id, merged_profile_ids: [] });
  });

  it('refuses a self-merge (400), unknown ids (404) and a merge past the cap (409)', async () => {
    const p = await create({ identity: 'cap-primary' });
    expect((await merge(p.id, [p.id])).status).toBe(400);
    const unknown = await merge(p.id, [randomUUID()]);
    expect(unknown.status).toBe(404);
    expect(unknown.body.details[0].path).toBe('/secondary_profile_ids/0');
    expect((await merge('nope', [p.id])).status).toBe(404);

    const many: string[] = [];
    for (let i = 0; i < 100; i++) many.push((await create({ identity: `cap-${i}` })).id);
    expect((await merge(p.id, many)).status).toBe(200);
    const extra = await create({ identity: 'cap-extra' });
    const refused = await merge(p.id, [extra.id]);
    expect(refused.status).toBe(409);
    expect(refused.body.message).toMatch(/cap/);
    expect((await svc.call('GET', `/tenant/profiles/${extra.id}`)).body.data.id).toBe(extra.id);
  });
});

describe('GET /identity/graph/{profile_id}', () => {
  it('shows identifier nodes, the event that linked them, and merged ids', async () => {
    const anon = randomUUID();
    const [, linkEvent] = await insertTestEvents(svc.rt.deps.db, svc.ws.id, [
      { anonymous_id: anon, event_type: 'page', event_name: 'x', at: '2024-06-01T00:00:00Z' },
      {
        anonymous_id: anon,
        identity: 'graph@example.com',
        event_type: 'identify',
        event_name: 'x',
        at: '2024-06-02T00:00:00Z',
      },
    ]);
    await waitProcessed(svc.rt.deps.db);
    const id = (await svc.call('GET', `/tenant/profiles?identity=${anon}`)).body.data[0].id;
    const res = await svc.call('GET', `/identity/graph/${id}`);
    expect(res.status).toBe(200);
    const g = res.body.data;
    expect(g.profile_id).toBe(id);
    const anonNode = g.nodes.find((n: { type: string }) => n.type === 'anonymous_id');
    const emailNode = g.nodes.find((n: { type: string }) => n.type === 'email');
    expect(anonNode).toMatchObject({
      value: anon,
      first_seen: '2024-06-01T00:00:00.000Z',
      last_seen: '2024-06-02T00:00:00.000Z',
    });
    expect(emailNode).toMatchObject({ value: 'graph@example.com', first_seen: '2024-06-02T00:00:00.000Z' });
    expect(g.edges).toEqual([
      { from: anonNode.id, to: emailNode.id, event_id: linkEvent, created_at: expect.any(String) },
    ]);
    expect(g.merged_profile_ids).toEqual([]);
    expect((await svc.call('GET', `/identity/graph/${randomUUID()}`)).status).toBe(404);
  });
});
