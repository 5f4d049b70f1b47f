import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../../../test/harness';
import { insertTestEvents, type TestEvent, waitProcessed } from './processing.test-kit';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc?.close());

const send = async (events: TestEvent[], workspaceId = svc.ws.id) => {
  const ids = await insertTestEvents(svc.rt.deps.db, workspaceId, events);
  await waitProcessed(svc.rt.deps.db);
  return ids;
};
const profileBy = async (identity: string) =>
  (await svc.call('GET', `/tenant/profiles?identity=${encodeURIComponent(identity)}`)).body.data;
const outbox = async (type: string) =>
  (
    await svc.rt.deps.db.query<{ data: Record<string, unknown> }>(
      'SELECT data FROM outbox WHERE workspace_id = $1 AND type = $2 ORDER BY seq',
      [svc.ws.id, type],
    )
  ).rows.map((r) => r.data);

describe('event processing', () => {
  it('turns anonymous browsing and a sign-up into one profile with traits and lineage', async () => {
    const anon = randomUUID();
    const createdBefore = (await outbox('profile.created')).length;
    const [, , identifyId] = await send([
      { anonymous_id: anon, event_type: 'page', event_name: 'Home', at: '2024-01-01T10:00:00Z' },
      { anonymous_id: anon, event_type: 'track', event_name: 'Viewed', at: '2024-01-01T10:01:00Z' },
      {
        anonymous_id: anon,
        identity: ' Ann@Example.COM ',
        event_type: 'identify',
        event_name: 'Signed up',
        payload: { first_name: 'Ann', plan: { tier: 'free' }, tags: ['new'] },
        at: '2024-01-01T10:02:00Z',
      },
    ]);
    const [p] = await profileBy(anon);
    expect(p).toMatchObject({
      email: 'ann@example.com',
      first_name: 'Ann',
      attributes: { plan: { tier: 'free' }, tags: ['new'] },
    });
    expect(p.identities).toEqual(
      expect.arrayContaining([
        { type: 'anonymous_id', value: anon },
        { type: 'email', value: 'ann@example.com' },
      ]),
    );
    expect((await profileBy('ann@example.com'))[0].id).toBe(p.id);
    expect((await outbox('profile.created')).length).toBe(createdBefore + 1);

    const lineage = (await svc.call('GET', `/tenant/profiles/${p.id}/lineage`)).body.data;
    expect(lineage.map((l: { path: string }) => l.path).sort()).toEqual([
      '/attributes/plan',
      '/attributes/tags',
      '/email',
      '/first_name',
    ]);
    expect(lineage[0]).toMatchObject({
      source_type: 'event',
      source_id: identifyId,
      occurred_at: '2024-01-01T10:02:00.000Z',
    });

    const events = (await svc.call('GET', `/tenant/profiles/${p.id}/events`)).body.data;
    expect(events.map((e: { event_name: string }) => e.event_name)).toEqual(['Signed up', 'Viewed', 'Home']);
  });

  it('merges a second device’s anonymous profile into the identified one', async () => {
    const laptop = randomUUID();
    const phone = randomUUID();
    await send([
      {
        anonymous_id: laptop,
        identity: 'bo@example.com',
        event_type: 'identify',
        event_name: 'Login',
        payload: { city: 'Oslo' },
        at: '2024-02-01T10:00:00Z',
      },
      {
        anonymous_id: phone,
        event_type: 'identify',
        event_name: 'Prefs',
        payload: { theme: 'dark', city: 'Rome' },
        at: '2024-02-01T09:00:00Z',
      },
    ]);
    const [anonProfile] = await profileBy(phone);
    const [identified] = await profileBy('bo@example.com');
    expect(anonProfile.id).not.toBe(identified.id);

    await send([
      {
        anonymous_id: phone,
        identity: 'bo@example.com',
        event_type: 'track',
        event_name: 'Login',
        at: '2024-02-02T10:00:00Z',
      },
    ]);
    const [after] = await profileBy(phone);
    expect(after.id).toBe(identified.id);
    // Oslo (10:00) is newer than Rome (09:00): the merge keeps it; theme is new, so it is added.
    expect(after.attributes).toEqual({ city: 'Oslo', theme: 'dark' });
    const old = await svc.call('GET', `/tenant/profiles/${anonProfile.id}`);
    expect(old.status).toBe(200);
    expect(old.body.data.id).toBe(identified.id);
    expect(await outbox('profile.merged')).toContainEqual(
      expect.objectContaining({ primary_profile_id: identified.id, merged_profile_ids: [anonProfile.id] }),
    );
    const timeline = (await svc.call('GET', `/tenant/profiles/${identified.id}/events`)).body.data;
    expect(timeline).toHaveLength(3);
    const graph = (await svc.call('GET', `/identity/graph/${identified.id}`)).body.data;
    expect(graph.merged_profile_ids).toEqual([anonProfile.id]);
  });

  it('gives a second person on a shared device their own profile (unique identifiers)', async () => {
    const shared = randomUUID();
    await send([
      {
        anonymous_id: shared,
        identity: 'cy@example.com',
        event_type: 'identify',
        event_name: 'Login',
        at: '2024-03-01T10:00:00Z',
      },
      {
        anonymous_id: shared,
        identity: 'di@example.com',
        event_type: 'identify',
        event_name: 'Login',
        at: '2024-03-01T11:00:00Z',
      },
    ]);
    const [cy] = await profileBy('cy@example.com');
    const [di] = await profileBy('di@example.com');
    expect(cy.id).not.toBe(di.id);
    expect((await profileBy(shared))[0].id).toBe(cy.id);
  });

  it('never lets a late event overwrite a newer trait', async () => {
    await send([
      {
        identity: 'ed@example.com',
        event_type: 'identify',
        event_name: 'x',
        payload: { last_name: 'New', plan: 'pro' },
        at: '2024-04-02T00:00:00Z',
      },
      {
        identity: 'ed@example.com',
        event_type: 'identify',
        event_name: 'x',
        payload: { last_name: 'Old', plan: 'free', zip: '0150' },
        at: '2024-04-01T00:00:00Z',
      },
    ]);
    const [ed] = await profileBy('ed@example.com');
    expect(ed.last_name).toBe('New');
    expect(ed.attributes).toEqual({ plan: 'pro', zip: '0150' });
  });

  it('links nothing through junk identifiers', async () => {
    const a = randomUUID();
    const b = randomUUID();
    await send([
      { anonymous_id: a, identity: 'anonymous', event_type: 'track', event_name: 'x' },
      { anonymous_id: b, identity: ' NULL ', event_type: 'track', event_name: 'x' },
    ]);
    expect((await profileBy(a))[0].id).not.toBe((await profileBy(b))[0].id);
    expect(await profileBy('anonymous')).toEqual([]);
  });

  it('honours the workspace’s own junk list', async () => {
    const ws = await svc.newWorkspace('junk');
    await svc.rt.deps.db.query(
      `UPDATE workspaces SET settings = '{"junk_identifiers":["test@test.com"]}' WHERE id = $1`,
      [ws.id],
    );
    const a = randomUUID();
    const b = randomUUID();
    await send(
      [
        { anonymous_id: a, identity: 'test@test.com', event_type: 'identify', event_name: 'x' },
        { anonymous_id: b, identity: 'TEST@test.com', event_type: 'identify', event_name: 'x' },
      ],
      ws.id,
    );
    const list = (await svc.call('GET', '/tenant/profiles', { key: ws.adminKey })).body.data;
    expect(list).toHaveLength(2);
  });

  it('dead-letters an event with no usable identifier, readable through the API', async () => {
    const [id] = await send([{ identity: 'undefined', event_type: 'track', event_name: 'Lost' }]);
    const res = await svc.call('GET', '/tenant/dead-letters');
    expect(res.status).toBe(200);
    const dl = res.body.data.find((d: { event: { id: string } }) => d.event.id === id);
    expect(dl.reason).toMatch(/no usable identifier/);
    expect(dl.event).toMatchObject({ event_name: 'Lost', identity: 'undefined' });
  });

  it('applies an order event through commerce on the resolved profile', async () => {
    await send([
      {
        identity: 'fay@example.com',
        event_type: 'order',
        event_name: 'Order Completed',
        payload: {
          order_id: `o-${randomUUID()}`,
          total: 42.5,
          items: [{ product_id: 'p1', price: 42.5, quantity: 1 }],
        },
      },
    ]);
    const [fay] = await profileBy('fay@example.com');
    expect(fay.total_spend).toBe(42.5);
    const orders = (await svc.call('GET', `/tenant/orders?profile_id=${fay.id}`)).body.data;
    expect(orders).toHaveLength(1);
  });
});

describe('failures', () => {
  it('moves a poison event to the dead letters without blocking the others', async () => {
    const db = svc.rt.deps.db;
    // A database-level failure on one event only (as a bug or a corrupt value would cause).
    await db.exec(`CREATE FUNCTION poison() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.new_value::text LIKE '%poison%' THEN RAISE EXCEPTION 'cannot store this value'; END IF; RETURN NEW; END $$;
      CREATE TRIGGER poison BEFORE INSERT ON profile_lineage FOR EACH ROW EXECUTE FUNCTION poison();`);
    try {
      const ids = await send([
        { identity: 'g1@example.com', event_type: 'identify', event_name: 'x', payload: { a: 1 } },
        { identity: 'g2@example.com', event_type: 'identify', event_name: 'x', payload: { a: 'poison' } },
        { identity: 'g3@example.com', event_type: 'identify', event_name: 'x', payload: { a: 3 } },
      ]);
      expect((await profileBy('g1@example.com'))[0].attributes).toEqual({ a: 1 });
      expect((await profileBy('g3@example.com'))[0].attributes).toEqual({ a: 3 });
      expect(await profileBy('g2@example.com')).toEqual([]);
      const dl = (await svc.call('GET', '/tenant/dead-letters')).body.data.find(
        (d: { event: { id: string } }) => d.event.id === ids[1],
      );
      expect(dl).toMatchObject({ attempts: 3 });
      expect(dl.reason).toContain('cannot store this value');

      await db.exec('DROP TRIGGER poison ON profile_lineage');
      const retry = await svc.call('POST', `/tenant/dead-letters/${dl.id}/retry`);
      expect(retry.status).toBe(200);
      await waitProcessed(db);
      expect((await profileBy('g2@example.com'))[0].attributes).toEqual({ a: 'poison' });
      expect((await svc.call('POST', `/tenant/dead-letters/${dl.id}/retry`)).status).toBe(404);
    } finally {
      await db.exec('DROP TRIGGER IF EXISTS poison ON profile_lineage; DROP FUNCTION IF EXISTS poison()');
    }
  });

  it('retries a transient failure until the event applies, exactly once', async () => {
    const db = svc.rt.deps.db;
    // A sequence, because it keeps counting across the rolled-back attempts.
    await db.exec(`CREATE SEQUENCE flaky_count;
      CREATE FUNCTION flaky() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE c int; BEGIN
        IF NEW.new_value::text LIKE '%flaky%' THEN
          c := nextval('flaky_count');
          IF c <= 2 THEN RAISE EXCEPTION 'try again' USING ERRCODE = '40001'; END IF;
        END IF; RETURN NEW; END $$;
      CREATE TRIGGER flaky BEFORE INSERT ON profile_lineage FOR EACH ROW EXECUTE FUNCTION flaky();`);
    try {
      await send([
        { identity: 'h@example.com', event_type: 'identify', event_name: 'x', payload: { v: 'flaky' } },
      ]);
      const [h] = await profileBy('h@example.com');
      expect(h.attributes).toEqual({ v: 'flaky' });
      const lineage = (await svc.call('GET', `/tenant/profiles/${h.id}/lineage`)).body.data;
      expect(lineage.filter((l: { path: string }) => l.path === '/attributes/v')).toHaveLength(1);
    } finally {
      await db.exec(
        'DROP TRIGGER IF EXISTS flaky ON profile_lineage; DROP FUNCTION IF EXISTS flaky(); DROP SEQUENCE flaky_count',
      );
    }
  });
});
