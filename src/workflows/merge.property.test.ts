import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService, type TestWorkspace } from '../../test/harness';
import { waitProcessed } from '../modules/processing/processing.test-kit';
import { waitSegmentsSettled } from '../modules/segments/segments.test-kit';

/**
 * Guests, sign-ins and orders in any interleaving, cut into any batches, come out the way a person
 * would tell it: every person's spend and orders are those of the devices they ever signed in on
 * (before or after buying) plus the orders placed under their e-mail, and a device nobody signed in
 * on keeps its own. A straightforward in-memory model says what to expect; the service, through its
 * API, must agree, segment membership included.
 */
let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc?.close());

const PEOPLE = 3;
const DEVICES = 4;
const SPENDERS = 50;
const email = (p: number) => `person${p}@example.com`;
const device = (d: number) => `dddddddd-0000-4000-8000-${String(d).padStart(12, '0')}`;

type Step =
  | { kind: 'browse'; device: number }
  | { kind: 'guest order'; device: number; total: number }
  | { kind: 'sign-in'; device: number }
  | { kind: 'order signed in'; device: number; total: number }
  | { kind: 'server order'; person: number; total: number };

interface Story {
  /** Which person each device belongs to (a device is one person's). */
  owners: number[];
  steps: Step[];
  /** Where the steps are cut into separately sent and processed batches. */
  cuts: number[];
}

const deviceArb = fc.integer({ min: 0, max: DEVICES - 1 });
const totalArb = fc.integer({ min: 1, max: 60 });
const stepArb: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('browse' as const), device: deviceArb }),
  fc.record({ kind: fc.constant('guest order' as const), device: deviceArb, total: totalArb }),
  fc.record({ kind: fc.constant('sign-in' as const), device: deviceArb }),
  fc.record({ kind: fc.constant('order signed in' as const), device: deviceArb, total: totalArb }),
  fc.record({
    kind: fc.constant('server order' as const),
    person: fc.integer({ min: 0, max: PEOPLE - 1 }),
    total: totalArb,
  }),
);
const storyArb: fc.Arbitrary<Story> = fc.record({
  owners: fc.array(fc.integer({ min: 0, max: PEOPLE - 1 }), { minLength: DEVICES, maxLength: DEVICES }),
  steps: fc.array(stepArb, { minLength: 1, maxLength: 14 }),
  cuts: fc.uniqueArray(fc.integer({ min: 1, max: 13 }), { maxLength: 4 }),
});

/** Who a customer is, as the API finds them: a person by e-mail, a device nobody signed in on by its id. */
type Customer = string;

/** The model: who ends up holding which orders. */
function expected(story: Story): Map<Customer, { orders: string[]; spend: number }> {
  const signedIn = new Set<number>();
  for (const s of story.steps)
    if (s.kind === 'sign-in' || s.kind === 'order signed in') signedIn.add(s.device);
  const customerOf = (s: Step): Customer =>
    s.kind === 'server order'
      ? email(s.person)
      : signedIn.has(s.device)
        ? email(story.owners[s.device]!)
        : device(s.device);
  const out = new Map<Customer, { orders: string[]; spend: number }>();
  story.steps.forEach((s, i) => {
    const c = out.get(customerOf(s)) ?? { orders: [], spend: 0 };
    out.set(customerOf(s), c);
    if ('total' in s) {
      c.orders.push(`order-${i}`);
      c.spend += s.total;
    }
  });
  return out;
}

function eventOf(story: Story, s: Step, i: number, at: Date): Record<string, unknown> {
  const base = { timestamp: at.toISOString(), message_id: `m-${i}` };
  const order = (total: number) => ({ order_id: `order-${i}`, total });
  switch (s.kind) {
    case 'browse':
      return { ...base, anonymous_id: device(s.device), event_type: 'page', event_name: 'Home' };
    case 'guest order':
      return {
        ...base,
        anonymous_id: device(s.device),
        event_type: 'order',
        event_name: 'Order Completed',
        payload: order(s.total),
      };
    case 'sign-in':
      return {
        ...base,
        anonymous_id: device(s.device),
        identity: email(story.owners[s.device]!),
        event_type: 'identify',
        event_name: 'Signed In',
      };
    case 'order signed in':
      return {
        ...base,
        anonymous_id: device(s.device),
        identity: email(story.owners[s.device]!),
        event_type: 'order',
        event_name: 'Order Completed',
        payload: order(s.total),
      };
    case 'server order':
      return {
        ...base,
        identity: email(s.person),
        event_type: 'order',
        event_name: 'Order Completed',
        payload: order(s.total),
      };
  }
}

async function tell(ws: TestWorkspace, story: Story): Promise<void> {
  const t0 = Date.now() - 3_600_000;
  const events = story.steps.map((s, i) => eventOf(story, s, i, new Date(t0 + i * 1000)));
  const cuts = [0, ...story.cuts.filter((c) => c < events.length).sort((a, b) => a - b), events.length];
  for (let k = 1; k < cuts.length; k++) {
    const chunk = events.slice(cuts[k - 1], cuts[k]);
    if (chunk.length === 0) continue;
    const res = await svc.call('POST', '/tenant/ingest/batch', { key: ws.adminKey, body: chunk });
    expect(res.status, res.text).toBe(202);
    await waitProcessed(svc.rt.deps.db);
  }
  await waitSegmentsSettled(svc.rt.deps.db);
}

async function observed(ws: TestWorkspace, customer: Customer) {
  const by = customer.includes('@') ? 'email' : 'identity';
  const list = await svc.call('GET', `/tenant/profiles?${by}=${encodeURIComponent(customer)}`, {
    key: ws.adminKey,
  });
  expect(list.body.data, `${customer} has exactly one profile`).toHaveLength(1);
  const profile = list.body.data[0];
  const orders = await svc.call('GET', `/tenant/orders?profile_id=${profile.id}&limit=100`, {
    key: ws.adminKey,
  });
  return {
    id: profile.id as string,
    spend: profile.total_spend as number,
    orders: orders.body.data.map((o: { order_id: string }) => o.order_id).sort() as string[],
  };
}

describe('guests, sign-ins and orders in any order and any batches', () => {
  it('leave every person with their own orders, spend and segment membership (property)', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(storyArb, async (story) => {
        const ws = await svc.newWorkspace(`merge property ${run++}`);
        const segment = await svc.call('POST', '/tenant/segments', {
          key: ws.adminKey,
          body: { name: 'spenders', query: { field: 'total_spend', op: 'gte', value: SPENDERS } },
        });
        expect(segment.status, segment.text).toBe(200);
        await tell(ws, story);

        const model = expected(story);
        const spenders = new Set<string>();
        for (const [customer, want] of model) {
          const got = await observed(ws, customer);
          expect({ customer, spend: got.spend, orders: got.orders }).toEqual({
            customer,
            spend: want.spend,
            orders: [...want.orders].sort(),
          });
          if (want.spend >= SPENDERS) spenders.add(got.id);
        }
        const profiles = await svc.call('GET', '/tenant/profiles?limit=100', { key: ws.adminKey });
        expect(profiles.body.data, 'one profile per customer').toHaveLength(model.size);
        const members = await svc.call('GET', `/tenant/segments/${segment.body.data.id}/members?limit=100`, {
          key: ws.adminKey,
        });
        expect(members.body.data.map((p: { id: string }) => p.id).sort()).toEqual([...spenders].sort());
      }),
      { numRuns: process.env.CI ? 12 : 8, endOnFailure: true },
    );
  }, 300_000);
});
