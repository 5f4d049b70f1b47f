import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService, type TestWorkspace } from '../../../test/harness';
import { waitUntil } from '../../../test/wait';
import { waitRescored } from './intelligence.test-kit';

/**
 * Scores in the product: the pipeline marks an order's profile, the score job rescores it with the
 * current fit within seconds (no refit), and churn.risk_escalated fires once per upward crossing.
 */
let svc: TestService;
let ws: TestWorkspace;
beforeAll(async () => {
  svc = await startTestService();
  ws = await svc.newWorkspace('rescoring');
}, 30_000);
afterAll(async () => svc?.close());

const DAY = 86_400_000;
const daysAgo = (n: number) => new Date(Date.now() - n * DAY).toISOString();

async function order(
  identity: string,
  at: string,
  total = 40,
  { orderId = `o-${randomUUID()}`, status }: { orderId?: string; status?: string } = {},
): Promise<number> {
  const res = await svc.call('POST', '/api/ingest', {
    key: ws.adminKey,
    body: {
      event_type: 'order',
      event_name: 'Order Completed',
      identity,
      timestamp: at,
      payload: { order_id: orderId, total, ...(status && { status }) },
    },
  });
  expect(res.status, res.text).toBe(202);
  return performance.now();
}

async function profileOf(identity: string): Promise<string> {
  const res = await svc.call('GET', `/tenant/profiles?identity=${encodeURIComponent(identity)}`, {
    key: ws.adminKey,
  });
  return res.body.data[0].id;
}

const clv = async (id: string) =>
  (await svc.call('GET', `/intelligence/clv/${id}`, { key: ws.adminKey })).body.data;

async function escalations(profileId: string): Promise<number> {
  const { rows } = await svc.rt.deps.db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM outbox WHERE type = 'churn.risk_escalated' AND data->>'profile_id' = $1`,
    [profileId],
  );
  return rows[0]!.n;
}

const refit = async () => {
  const res = await svc.call('POST', '/intelligence/models/fit', { key: ws.adminKey, body: {} });
  expect(res.status, res.text).toBe(200);
  return res.body.data;
};

describe('an order event', () => {
  it('gets a first workspace fit by itself (the fallback, with so little data) and scores its profile', async () => {
    await order('first@example.com', daysAgo(30));
    await waitRescored(svc.rt.deps.db);
    const id = await profileOf('first@example.com');
    const data = await clv(id);
    expect(data.model.name).toBe('fallback_empirical_rate+fallback_mean_spend');
    expect(data.p_alive).toBeGreaterThan(0);
    expect(data.predicted_clv).toBeGreaterThan(0);
  });

  it('rescores its own profile within seconds with the current parameters, without a fit', async () => {
    const before = (await svc.call('GET', '/intelligence/models', { key: ws.adminKey })).body.data;
    const id = await profileOf('first@example.com');
    const lags: number[] = [];
    for (let i = 1; i <= 5; i++) {
      const previous = await clv(id);
      const accepted = await order('first@example.com', new Date().toISOString(), 10 * i);
      await waitUntil(
        async () => {
          const now = await clv(id);
          return now.as_of !== previous.as_of || now.expected_order_value !== previous.expected_order_value;
        },
        { what: `the rescore after order ${i}`, timeoutMs: 5_000, intervalMs: 10 },
      );
      lags.push(performance.now() - accepted);
    }
    console.log(`order 202 → scores visible: ${lags.map((l) => l.toFixed(0)).join(', ')} ms`);
    const after = (await svc.call('GET', '/intelligence/models', { key: ws.adminKey })).body.data;
    expect(after).toEqual(before);
    const churn = (await svc.call('GET', `/intelligence/churn/${id}`, { key: ws.adminKey })).body.data;
    expect(churn.days_since_last_order).toBe(0);
    expect(churn.risk_level).toBe('low');
  });
});

describe('churn.risk_escalated', () => {
  it('fires once when the score crosses the threshold upward, and again only after it fell below', async () => {
    await order('lapsed@example.com', daysAgo(400));
    await order('lapsed@example.com', daysAgo(390));
    await waitRescored(svc.rt.deps.db);
    const id = await profileOf('lapsed@example.com');
    await refit();
    const risk = async () =>
      (await svc.call('GET', `/intelligence/churn/${id}`, { key: ws.adminKey })).body.data.churn_risk_score;
    expect(await risk()).toBeGreaterThanOrEqual(0.7);
    expect(await escalations(id)).toBe(1);

    await refit(); // still above: no second fact
    expect(await escalations(id)).toBe(1);

    const comeback = `o-${randomUUID()}`;
    await order('lapsed@example.com', new Date().toISOString(), 40, { orderId: comeback }); // back: below
    await waitRescored(svc.rt.deps.db);
    expect(await risk()).toBeLessThan(0.7);
    expect(await escalations(id)).toBe(1);

    // That order is refunded: 390 days of silence again, above the threshold, a second fact.
    await order('lapsed@example.com', new Date().toISOString(), 40, {
      orderId: comeback,
      status: 'refunded',
    });
    await waitRescored(svc.rt.deps.db);
    expect(await risk()).toBeGreaterThanOrEqual(0.7);
    expect(await escalations(id)).toBe(2);
  });
});

describe('a merged-away profile id', () => {
  it('reads the survivor’s scores, rescored with the merged orders after an API merge', async () => {
    const a = await profileOf('first@example.com');
    const b = await profileOf('lapsed@example.com');
    const before = await clv(a);
    const merged = await svc.call('POST', '/identity/merge', {
      key: ws.adminKey,
      body: { primary_profile_id: a, secondary_profile_ids: [b] },
    });
    expect(merged.status, merged.text).toBe(200);
    // The survivor holds the merged orders now, and is rescored with them.
    await waitRescored(svc.rt.deps.db);
    expect((await clv(a)).as_of).not.toBe(before.as_of);
    const res = await svc.call('GET', `/intelligence/churn/${b}`, { key: ws.adminKey });
    expect(res.status).toBe(200);
    expect(res.body.data.profile_id).toBe(a);
  });
});
