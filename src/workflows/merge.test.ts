import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService, type TestWorkspace } from '../../test/harness';
import { settle as settleAll } from '../../test/settle';

/**
 * Every entry point that merges profiles has every effect of a merge: one table of effects, run for
 * each entry point against the same starting rows. The story is the everyday one: Ann signs in on
 * device A; on device B a guest browses, tells us their plan and buys (total 42); then the guest
 * turns out to be Ann, because she signs in on B (the event pipeline) or because a person merges
 * the two profiles (POST /identity/merge).
 */
let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc?.close());

const DEVICE_A = 'aaaaaaaa-0000-4000-8000-00000000000a';
const DEVICE_B = 'bbbbbbbb-0000-4000-8000-00000000000b';
const ANN = 'ann@example.com';

interface Scene {
  ws: TestWorkspace;
  ann: string;
  guest: string;
  segmentId: string;
  /** Accounts (group ids): the guest's own, and one both were members of before the merge. */
  guestAccount: string;
  sharedAccount: string;
}

const call = (ws: TestWorkspace, method: string, url: string, body?: unknown) =>
  svc.call(method, url, { key: ws.adminKey, ...(body === undefined ? {} : { body }) });

async function ingest(ws: TestWorkspace, event: Record<string, unknown>): Promise<void> {
  const res = await call(ws, 'POST', '/api/ingest', event);
  expect(res.status, res.text).toBe(202);
}

/** Everything the background work does after a change: events, segment refreshes, rescoring. */
const settle = () => settleAll(svc.rt.deps.db);

async function profileIdOf(ws: TestWorkspace, query: string): Promise<string> {
  const res = await call(ws, 'GET', `/tenant/profiles?${query}`);
  expect(res.body.data, res.text).toHaveLength(1);
  return res.body.data[0].id;
}

/** Ann on device A, a guest on device B who browses, states a plan and buys; a segment of spenders. */
async function stage(name: string): Promise<Scene> {
  const ws = await svc.newWorkspace(name);
  const saved = await call(ws, 'POST', '/tenant/segments', {
    name: 'Spent at least 40',
    query: { field: 'total_spend', op: 'gte', value: 40 },
  });
  expect(saved.status, saved.text).toBe(200);
  await ingest(ws, {
    anonymous_id: DEVICE_A,
    identity: ANN,
    event_type: 'identify',
    event_name: 'Signed In',
    payload: { first_name: 'Ann' },
  });
  await ingest(ws, { anonymous_id: DEVICE_B, event_type: 'page', event_name: 'Pricing' });
  await ingest(ws, {
    anonymous_id: DEVICE_B,
    event_type: 'identify',
    event_name: 'Plan Chosen',
    payload: { plan: 'pro' },
  });
  await ingest(ws, {
    anonymous_id: DEVICE_B,
    event_type: 'order',
    event_name: 'Order Completed',
    payload: { order_id: 'guest-1', total: 42 },
  });
  // `group` calls (docs/ingestion.md): Ann and the guest at the same company, the guest at another.
  const [guestAccount, sharedAccount] = [`guest-co-${randomUUID()}`, `shared-co-${randomUUID()}`];
  const group = (anon: string, groupId: string, at: string) =>
    ingest(ws, {
      anonymous_id: anon,
      ...(anon === DEVICE_A ? { identity: ANN } : {}),
      event_type: 'track',
      event_name: 'Group',
      timestamp: at,
      payload: { group_id: groupId },
    });
  await group(DEVICE_A, sharedAccount, '2024-03-02T00:00:00.000Z');
  await group(DEVICE_B, sharedAccount, '2024-03-01T00:00:00.000Z');
  await group(DEVICE_B, sharedAccount, '2024-03-03T00:00:00.000Z');
  await group(DEVICE_B, guestAccount, '2024-03-01T00:00:00.000Z');
  await settle();
  const ann = await profileIdOf(ws, `email=${ANN}`);
  const guest = await profileIdOf(ws, `identity=${DEVICE_B}`);
  expect(guest).not.toBe(ann);
  // Before the merge the guest is the spender, Ann is not.
  const members = await call(ws, 'GET', `/tenant/segments/${saved.body.data.id}/members`);
  expect(members.body.data.map((p: { id: string }) => p.id)).toEqual([guest]);
  return { ws, ann, guest, segmentId: saved.body.data.id, guestAccount, sharedAccount };
}

const ENTRY_POINTS: Array<{ name: string; merge(s: Scene): Promise<void> }> = [
  {
    name: 'the event pipeline (the guest signs in on device B)',
    merge: (s) =>
      ingest(s.ws, {
        anonymous_id: DEVICE_B,
        identity: ANN,
        event_type: 'identify',
        event_name: 'Signed In',
      }),
  },
  {
    name: 'POST /identity/merge (a person merges the guest into Ann)',
    async merge(s) {
      const res = await call(s.ws, 'POST', '/identity/merge', {
        primary_profile_id: s.ann,
        secondary_profile_ids: [s.guest],
      });
      expect(res.status, res.text).toBe(200);
    },
  },
];

/** The effects of a merge, each checked through the API where the API shows it. */
const EFFECTS: Array<{ effect: string; check(s: Scene): Promise<void> }> = [
  {
    effect: 'the guest’s id names Ann from now on',
    async check(s) {
      expect((await call(s.ws, 'GET', `/tenant/profiles/${s.guest}`)).body.data.id).toBe(s.ann);
    },
  },
  {
    effect: 'identifiers: both devices and the e-mail are Ann’s, and the guest is listed as merged into her',
    async check(s) {
      const graph = (await call(s.ws, 'GET', `/identity/graph/${s.ann}`)).body.data;
      expect(graph.nodes.map((n: { type: string; value: string }) => `${n.type}:${n.value}`).sort()).toEqual(
        [`anonymous_id:${DEVICE_A}`, `anonymous_id:${DEVICE_B}`, `email:${ANN}`].sort(),
      );
      expect(graph.merged_profile_ids).toEqual([s.guest]);
    },
  },
  {
    effect: 'traits and lineage: the guest’s plan is Ann’s, and her lineage says it came from the guest',
    async check(s) {
      const ann = (await call(s.ws, 'GET', `/tenant/profiles/${s.ann}`)).body.data;
      expect(ann).toMatchObject({ first_name: 'Ann', attributes: { plan: 'pro' } });
      const lineage = (await call(s.ws, 'GET', `/tenant/profiles/${s.ann}/lineage?limit=100`)).body.data;
      expect(lineage.filter((l: { path: string }) => l.path === '/attributes/plan')).toEqual(
        expect.arrayContaining([expect.objectContaining({ new: 'pro', merged_from: s.guest })]),
      );
    },
  },
  {
    effect: 'events: the guest’s browsing and purchase are on Ann’s timeline',
    async check(s) {
      const events = (await call(s.ws, 'GET', `/tenant/profiles/${s.ann}/events?limit=100`)).body.data;
      expect(events.map((e: { event_name: string }) => e.event_name)).toEqual(
        expect.arrayContaining(['Pricing', 'Plan Chosen', 'Order Completed']),
      );
    },
  },
  {
    effect: 'orders: the guest’s order is Ann’s, and so is its spend',
    async check(s) {
      const orders = (await call(s.ws, 'GET', `/tenant/orders?profile_id=${s.ann}`)).body.data;
      expect(orders.map((o: { order_id: string }) => o.order_id)).toEqual(['guest-1']);
      expect((await call(s.ws, 'GET', `/tenant/profiles/${s.ann}`)).body.data.total_spend).toBe(42);
    },
  },
  {
    effect: 'the order summary: the merged-away row no longer counts the order',
    async check(s) {
      const { rows } = await svc.rt.deps.db.query<{ total_spend: number; completed_orders: number }>(
        'SELECT total_spend, completed_orders FROM profiles WHERE id = $1',
        [s.guest],
      );
      expect(rows[0]).toEqual({ total_spend: 0, completed_orders: 0 });
    },
  },
  {
    effect: 'scores: Ann is rescored with the order (her churn score counts days since it)',
    async check(s) {
      const churn = (await call(s.ws, 'GET', `/intelligence/churn/${s.ann}`)).body.data;
      expect(churn.profile_id).toBe(s.ann);
      expect(churn.days_since_last_order).toBe(0);
    },
  },
  {
    effect: 'segments: the guest exits, Ann enters',
    async check(s) {
      const members = (await call(s.ws, 'GET', `/tenant/segments/${s.segmentId}/members`)).body.data;
      expect(members.map((p: { id: string }) => p.id)).toEqual([s.ann]);
      const changes = (await call(s.ws, 'GET', `/tenant/segments/${s.segmentId}/changes?limit=100`)).body
        .data;
      const said = changes.map((c: { profile_id: string; change: string }) => `${c.change}:${c.profile_id}`);
      expect(said).toEqual(expect.arrayContaining([`exited:${s.guest}`, `entered:${s.ann}`]));
    },
  },
  {
    effect:
      'accounts: the guest’s memberships are Ann’s, one per account, seen from the earliest call to the latest',
    async check(s) {
      const ids = (list: Array<{ id: string }>) => list.map((a) => a.id).sort();
      const anns = (await call(s.ws, 'GET', `/tenant/accounts?profile_id=${s.ann}`)).body.data;
      expect(ids(anns)).toEqual([s.guestAccount, s.sharedAccount].sort());
      const shared = (await call(s.ws, 'GET', `/tenant/accounts/${s.sharedAccount}`)).body.data;
      expect(shared.member_count).toBe(1);
      expect(shared.members).toEqual([
        { profile_id: s.ann, first_seen: '2024-03-01T00:00:00.000Z', last_seen: '2024-03-03T00:00:00.000Z' },
      ]);
      const guests = (await call(s.ws, 'GET', `/tenant/accounts/${s.guestAccount}`)).body.data;
      expect(guests.members.map((m: { profile_id: string }) => m.profile_id)).toEqual([s.ann]);
    },
  },
  {
    effect: 'the outbox: one profile.merged fact naming Ann and the guest',
    async check(s) {
      const { rows } = await svc.rt.deps.db.query<{ data: Record<string, unknown> }>(
        `SELECT data FROM outbox WHERE workspace_id = $1 AND type = 'profile.merged'`,
        [s.ws.id],
      );
      expect(rows.map((r) => [r.data.primary_profile_id, r.data.merged_profile_ids])).toEqual([
        [s.ann, [s.guest]],
      ]);
    },
  },
];

for (const entry of ENTRY_POINTS) {
  describe(`a merge through ${entry.name}`, () => {
    let scene: Scene;
    beforeAll(async () => {
      scene = await stage(entry.name.slice(0, 40));
      await entry.merge(scene);
      await settle();
    }, 60_000);

    for (const { effect, check } of EFFECTS) it(effect, () => check(scene));
  });
}
