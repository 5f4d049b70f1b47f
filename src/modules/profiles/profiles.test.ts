import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../../../test/harness';
import { insertTestEvents, waitProcessed } from '../processing/processing.test-kit';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc?.close());

const upsert = (body: unknown, key?: string) =>
  svc.call('POST', '/tenant/profiles', { body, ...(key ? { key } : {}) });
const send = async (events: Parameters<typeof insertTestEvents>[2]) => {
  const ids = await insertTestEvents(svc.rt.deps.db, svc.ws.id, events);
  await waitProcessed(svc.rt.deps.db);
  return ids;
};

describe('POST /tenant/profiles', () => {
  it('creates a profile with the spec’s shape and its identifiers', async () => {
    const res = await upsert({
      identity: '+1 (415) 555-2671',
      email: 'Ivy@Example.com',
      first_name: 'Ivy',
      attributes: { plan: 'pro' },
    });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      email: 'ivy@example.com',
      first_name: 'Ivy',
      last_name: null,
      total_spend: 0,
      rfm_segment: null,
      churn_risk_score: null,
      predicted_clv: null,
      attributes: { plan: 'pro' },
    });
    expect(res.body.data.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.body.data.created_at).toMatch(/Z$/);
    expect(res.body.data.identities).toEqual(
      expect.arrayContaining([
        { type: 'phone', value: '+14155552671' },
        { type: 'email', value: 'ivy@example.com' },
      ]),
    );
  });

  it('updates the profile it matches by identity, then by email, and by id', async () => {
    const first = (await upsert({ identity: 'crm-1001', attributes: { tags: ['a'] } })).body.data;
    const byIdentity = await upsert({ identity: ' crm-1001 ', attributes: { tags: 'b' } });
    expect(byIdentity.body.data.id).toBe(first.id);
    expect(byIdentity.body.data.attributes).toEqual({ tags: ['a', 'b'] });

    const withEmail = (await upsert({ email: 'jo@example.com', first_name: 'Jo' })).body.data;
    const byEmail = await upsert({ email: 'JO@example.com', last_name: 'Lee' });
    expect(byEmail.body.data).toMatchObject({ id: withEmail.id, first_name: 'Jo', last_name: 'Lee' });

    const byId = await upsert({ id: first.id, first_name: 'Kai' });
    expect(byId.body.data).toMatchObject({ id: first.id, first_name: 'Kai' });
  });

  it('answers 404 for an unknown or malformed id, and 409 for an identity owned by another profile', async () => {
    expect((await upsert({ id: randomUUID(), first_name: 'x' })).status).toBe(404);
    expect((await upsert({ id: 'not-a-uuid', first_name: 'x' })).status).toBe(404);
    const a = (await upsert({ identity: 'owner-a' })).body.data;
    await upsert({ identity: 'owner-b' });
    const clash = await upsert({ id: a.id, identity: 'owner-b' });
    expect(clash.status).toBe(409);
    expect(clash.body.error_code).toBe('CONFLICT');
  });

  it('refuses unusable input with a 400 naming the field', async () => {
    for (const [body, path] of [
      [{ identity: 'anonymous' }, '/identity'],
      [{ email: 'not-an-email' }, '/email'],
      [{ attributes: { a: 'x\u0000y' } }, '/attributes/a'],
      [{ attributes: [1] }, '/attributes'],
      [{ extra: 1 }, '/extra'],
    ] as const) {
      const res = await upsert(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.details.map((d: { path: string }) => d.path)).toContain(path);
    }
  });

  it('records lineage with the API key as source', async () => {
    const p = (await upsert({ identity: 'lin-1', first_name: 'A' })).body.data;
    await upsert({ id: p.id, first_name: 'B', attributes: { x: 1 } });
    const res = await svc.call('GET', `/tenant/profiles/${p.id}/lineage?limit=2`);
    expect(res.status).toBe(200);
    const keyId = (await svc.call('GET', '/tenant/apikeys')).body.data[0].id;
    expect(
      res.body.data.map((l: { path: string; old: unknown; new: unknown }) => [l.path, l.old, l.new]),
    ).toEqual([
      ['/attributes/x', null, 1],
      ['/first_name', 'A', 'B'],
    ]);
    expect(res.body.data[0]).toMatchObject({ source_type: 'api_key', source_id: keyId });
    const next = await svc.call(
      'GET',
      `/tenant/profiles/${p.id}/lineage?limit=2&cursor=${res.body.pagination.next_cursor}`,
    );
    expect(next.body.data.map((l: { path: string }) => l.path)).toEqual(['/first_name']);
    expect(next.body.pagination).toEqual({ limit: 2, next_cursor: null, has_more: false });
  });

  it('records the old and new values of lineage exactly, whatever characters they hold', async () => {
    // Values travel to the database as array elements of JSON text: quoting must survive both.
    const awkward = ['a "quoted", {braced} \\ back\\slash', 'NULL', '', 'ümlaut ✓ 🚀', '{"not":"json"}'];
    const p = (await upsert({ identity: 'lin-awkward', attributes: { s: awkward[0], n: null } })).body.data;
    await upsert({
      id: p.id,
      attributes: { s: awkward, n: { deep: [null, 'x,y', { z: awkward[4] }] }, t: null },
    });
    const res = await svc.call('GET', `/tenant/profiles/${p.id}/lineage?limit=10`);
    const changes = res.body.data.map((l: { path: string; old: unknown; new: unknown }) => [
      l.path,
      l.old,
      l.new,
    ]);
    // Newest first; a JSON null is a value (new: null), "no value before" is old: null.
    expect(changes).toEqual([
      ['/attributes/t', null, null],
      ['/attributes/n', null, { deep: [null, 'x,y', { z: awkward[4] }] }],
      ['/attributes/s', awkward[0], awkward],
      ['/attributes/n', null, null],
      ['/attributes/s', null, awkward[0]],
    ]);
  });
});

describe('GET /tenant/profiles', () => {
  it('filters by exact email and by any identifier, normalized', async () => {
    const anon = randomUUID();
    await send([
      {
        anonymous_id: anon,
        identity: '+44 20 7946 0958',
        event_type: 'identify',
        event_name: 'x',
        payload: { email: 'Lu@Example.com' },
      },
    ]);
    const byEmail = (await svc.call('GET', '/tenant/profiles?email=%20lu@EXAMPLE.com')).body.data;
    expect(byEmail).toHaveLength(1);
    for (const identity of ['+442079460958', '+44 (20) 7946-0958', anon.toUpperCase()]) {
      const res = await svc.call('GET', `/tenant/profiles?identity=${encodeURIComponent(identity)}`);
      expect(res.body.data.map((p: { id: string }) => p.id)).toEqual([byEmail[0].id]);
    }
    expect((await svc.call('GET', '/tenant/profiles?identity=nobody')).body.data).toEqual([]);
  });

  it('pages without repeats or gaps', async () => {
    const ws = await svc.newWorkspace('paging');
    for (let i = 0; i < 5; i++) await upsert({ identity: `page-${i}` }, ws.adminKey);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await svc.call('GET', `/tenant/profiles?limit=2${cursor ? `&cursor=${cursor}` : ''}`, {
        key: ws.adminKey,
      });
      seen.push(
        ...res.body.data.map((p: { identities: Array<{ value: string }> }) => p.identities[0]!.value),
      );
      cursor = res.body.pagination.next_cursor;
    } while (cursor);
    expect(seen).toEqual(['page-0', 'page-1', 'page-2', 'page-3', 'page-4']);
  });
});

describe('GET /tenant/profiles/{id}', () => {
  it('answers 404 for unknown, malformed and other workspaces’ ids', async () => {
    const other = await svc.newWorkspace('other');
    const foreign = (await upsert({ identity: 'foreign' }, other.adminKey)).body.data;
    for (const id of [randomUUID(), 'nope', '1 OR 1=1', foreign.id]) {
      const res = await svc.call('GET', `/tenant/profiles/${encodeURIComponent(id)}`);
      expect(res.status).toBe(404);
      expect(res.body.error_code).toBe('NOT_FOUND');
    }
  });

  it('lists the profile’s events newest first, in pages', async () => {
    const anon = randomUUID();
    await send(
      [3, 1, 2].map((d) => ({
        anonymous_id: anon,
        event_type: 'page' as const,
        event_name: `day ${d}`,
        at: `2024-05-0${d}T00:00:00Z`,
      })),
    );
    const id = (await svc.call('GET', `/tenant/profiles?identity=${anon}`)).body.data[0].id;
    const page1 = await svc.call('GET', `/tenant/profiles/${id}/events?limit=2`);
    expect(page1.body.data.map((e: { event_name: string }) => e.event_name)).toEqual(['day 3', 'day 2']);
    expect(page1.body.data[0]).toMatchObject({
      event_type: 'page',
      anonymous_id: anon,
      timestamp: '2024-05-03T00:00:00.000Z',
    });
    const page2 = await svc.call(
      'GET',
      `/tenant/profiles/${id}/events?limit=2&cursor=${page1.body.pagination.next_cursor}`,
    );
    expect(page2.body.data.map((e: { event_name: string }) => e.event_name)).toEqual(['day 1']);
  });
});

describe('DELETE /tenant/profiles/{id}', () => {
  it('erases the profile, its events, identifiers, lineage and account memberships, keeps its orders unlinked, and logs no data', async () => {
    await send([
      {
        identity: 'erase-me@example.com',
        event_type: 'identify',
        event_name: 'x',
        payload: { first_name: 'Gone' },
      },
      {
        identity: 'erase-me@example.com',
        event_type: 'order',
        event_name: 'Order',
        payload: { order_id: `er-${randomUUID()}`, total: 10 },
      },
      // A `group` call (docs/ingestion.md): the person becomes a member of the account.
      {
        identity: 'erase-me@example.com',
        event_type: 'track',
        event_name: 'Group',
        payload: { group_id: 'erase-co' },
      },
    ]);
    const p = (await svc.call('GET', '/tenant/profiles?identity=erase-me@example.com')).body.data[0];
    expect((await svc.call('GET', '/tenant/accounts/erase-co')).body.data.members).toEqual([
      expect.objectContaining({ profile_id: p.id }),
    ]);
    const properties = 'SELECT count(*)::int AS n FROM event_properties WHERE profile_id = $1';
    expect((await svc.rt.deps.db.query<{ n: number }>(properties, [p.id])).rows[0]!.n).toBeGreaterThan(0);
    const res = await svc.call('DELETE', `/tenant/profiles/${p.id}`);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      profile_id: p.id,
      suppressed: false,
      counts: { profiles: 1, events: 3, identity_nodes: 1, orders: 1, account_members: 1 },
    });
    expect(res.body.data.counts.profile_lineage).toBeGreaterThan(0);
    expect((await svc.call('GET', `/tenant/profiles/${p.id}`)).status).toBe(404);
    expect((await svc.call('DELETE', `/tenant/profiles/${p.id}`)).status).toBe(404);
    const db = svc.rt.deps.db;
    const left = await db.query(
      `SELECT (SELECT count(*) FROM event_profiles WHERE profile_id = $1)::int AS events,
              (SELECT count(*) FROM event_properties WHERE profile_id = $1)::int AS properties,
              (SELECT count(*) FROM profile_lineage WHERE profile_id = $1)::int AS lineage,
              (SELECT count(*) FROM orders WHERE profile_id = $1)::int AS orders,
              (SELECT count(*) FROM profile_erasures WHERE profile_id = $1)::int AS logged`,
      [p.id],
    );
    expect(left.rows[0]).toEqual({ events: 0, properties: 0, lineage: 0, orders: 0, logged: 1 });
    // The account stays (it describes a company, not the person); the membership goes.
    const account = await svc.call('GET', '/tenant/accounts/erase-co');
    expect(account.body.data).toMatchObject({ id: 'erase-co', member_count: 0, members: [] });
    expect((await svc.call('GET', `/tenant/accounts?profile_id=${p.id}`)).body.data).toEqual([]);
    const memberships = 'SELECT count(*)::int AS n FROM account_members WHERE profile_id = $1';
    expect((await db.query<{ n: number }>(memberships, [p.id])).rows[0]!.n).toBe(0);
    const log = await db.query('SELECT * FROM profile_erasures WHERE profile_id = $1', [p.id]);
    expect(JSON.stringify(log.rows)).not.toMatch(/erase-me|Gone/);
    // Without suppression, the person may come back as a new profile.
    await send([{ identity: 'erase-me@example.com', event_type: 'track', event_name: 'back' }]);
    expect((await svc.call('GET', '/tenant/profiles?identity=erase-me@example.com')).body.data).toHaveLength(
      1,
    );
  });

  it('with suppress=true, blocks the identifiers from creating a profile again', async () => {
    const anon = randomUUID();
    await send([
      { anonymous_id: anon, identity: 'forget-me@example.com', event_type: 'identify', event_name: 'x' },
    ]);
    const p = (await svc.call('GET', '/tenant/profiles?identity=forget-me@example.com')).body.data[0];
    const res = await svc.call('DELETE', `/tenant/profiles/${p.id}?suppress=true`);
    expect(res.body.data.suppressed).toBe(true);
    const stored = await svc.rt.deps.db.query(
      'SELECT hash FROM identifier_suppressions WHERE workspace_id = $1',
      [svc.ws.id],
    );
    expect(JSON.stringify(stored.rows)).not.toContain('forget-me');

    await send([
      { identity: 'FORGET-ME@example.com', event_type: 'track', event_name: 'x' },
      { anonymous_id: anon, event_type: 'page', event_name: 'x' },
      {
        anonymous_id: randomUUID(),
        identity: 'forget-me@example.com',
        event_type: 'identify',
        event_name: 'x',
      },
    ]);
    expect((await svc.call('GET', '/tenant/profiles?identity=forget-me@example.com')).body.data).toEqual([]);
    expect((await svc.call('GET', `/tenant/profiles?identity=${anon}`)).body.data).toEqual([]);
    const kept = await svc.rt.deps.db.query(
      "SELECT count(*)::int AS n FROM events WHERE lower(identity) = 'forget-me@example.com'",
    );
    expect(kept.rows[0]).toEqual({ n: 0 });
    const api = await upsert({ identity: 'forget-me@example.com' });
    expect(api.status).toBe(409);
  });
});
