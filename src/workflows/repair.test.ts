import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService, type TestWorkspace } from '../../test/harness';
import { settle as settleAll } from '../../test/settle';
import { waitUntil } from '../../test/wait';
import { loadMigrations } from '../platform/db/migrate';
import { repairStrandedOrders } from './repair';

/**
 * Databases written by older versions hold orders stranded on merged-away profiles (a guest's order
 * left behind when the guest signed in). The repair moves them to the survivors, and the service
 * runs it once by itself.
 */
let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc?.close());

const GUEST = 'cccccccc-0000-4000-8000-00000000000c';

async function ingest(ws: TestWorkspace, event: Record<string, unknown>): Promise<void> {
  const res = await svc.call('POST', '/api/ingest', { key: ws.adminKey, body: event });
  expect(res.status, res.text).toBe(202);
}

const settle = () => settleAll(svc.rt.deps.db);

const profileByEmail = async (ws: TestWorkspace, email: string) =>
  (await svc.call('GET', `/tenant/profiles?email=${email}`, { key: ws.adminKey })).body.data[0];

/** A guest buys, then signs in as Bea; the order is then put back where older versions left it. */
async function strandedWorkspace(): Promise<{
  ws: TestWorkspace;
  bea: string;
  guest: string;
  segment: string;
}> {
  const ws = await svc.newWorkspace('stranded orders');
  const seg = await svc.call('POST', '/tenant/segments', {
    key: ws.adminKey,
    body: { name: 'spent 40', query: { field: 'total_spend', op: 'gte', value: 40 } },
  });
  await ingest(ws, { identity: 'bea@example.com', event_type: 'identify', event_name: 'Signed Up' });
  await ingest(ws, {
    anonymous_id: GUEST,
    event_type: 'order',
    event_name: 'Order Completed',
    payload: { order_id: 'old-1', total: 45 },
  });
  await settle();
  const guest = (await svc.call('GET', `/tenant/profiles?identity=${GUEST}`, { key: ws.adminKey })).body
    .data[0].id;
  await ingest(ws, {
    anonymous_id: GUEST,
    identity: 'bea@example.com',
    event_type: 'identify',
    event_name: 'Signed In',
  });
  await settle();
  const bea = (await profileByEmail(ws, 'bea@example.com')).id;
  // What an older version's pipeline merge left: the order and its summary on the merged-away row.
  const db = svc.rt.deps.db;
  await db.query('UPDATE orders SET profile_id = $2 WHERE workspace_id = $1', [ws.id, guest]);
  await db.query(
    `UPDATE profiles SET total_spend = 45, completed_orders = 1, completed_first_at = now(), completed_last_at = now()
      WHERE id = $1`,
    [guest],
  );
  await db.query(
    `UPDATE profiles SET total_spend = 0, completed_orders = 0, completed_first_at = NULL, completed_last_at = NULL
      WHERE id = $1`,
    [bea],
  );
  return { ws, bea, guest, segment: seg.body.data.id };
}

describe('the repair of stranded orders', () => {
  it('moves the orders to the survivor, recomputes both summaries, says how many, and finds nothing the second time', async () => {
    const { ws, bea, guest, segment } = await strandedWorkspace();
    expect((await profileByEmail(ws, 'bea@example.com')).total_spend).toBe(0);

    const report = await repairStrandedOrders(svc.rt.deps.db);
    expect(report).toMatchObject({ orders: 1, profiles: 1 });
    expect(report.scanned).toBeGreaterThanOrEqual(1);
    await settle();

    expect((await profileByEmail(ws, 'bea@example.com')).total_spend).toBe(45);
    const orders = await svc.call('GET', `/tenant/orders?profile_id=${bea}`, { key: ws.adminKey });
    expect(orders.body.data.map((o: { order_id: string }) => o.order_id)).toEqual(['old-1']);
    const { rows } = await svc.rt.deps.db.query<{ total_spend: number }>(
      'SELECT total_spend FROM profiles WHERE id = $1',
      [guest],
    );
    expect(rows[0]!.total_spend).toBe(0);
    // Marked for refresh, so her segments and scores follow.
    const members = await svc.call('GET', `/tenant/segments/${segment}/members`, { key: ws.adminKey });
    expect(members.body.data.map((p: { id: string }) => p.id)).toEqual([bea]);
    const churn = await svc.call('GET', `/intelligence/churn/${bea}`, { key: ws.adminKey });
    expect(churn.body.data.days_since_last_order).toBe(0);

    expect(await repairStrandedOrders(svc.rt.deps.db)).toMatchObject({ orders: 0, profiles: 0 });
  });

  it('is queued by its migration where orders are stranded, and run by the service’s job runner', async () => {
    const db = svc.rt.deps.db;
    const migration = loadMigrations().find((m) => m.version === 28)!;
    // Nothing stranded (the first test repaired it): the migration queues nothing.
    await db.exec(migration.sql);
    const queued = () =>
      db.query<{ state: string }>(`SELECT state FROM jobs WHERE id = 'job_0028_repair_stranded_orders'`);
    expect((await queued()).rows).toEqual([]);

    const { ws, bea } = await strandedWorkspace();
    await db.exec(migration.sql);
    expect((await queued()).rows).toHaveLength(1);
    await waitUntil(async () => (await queued()).rows[0]?.state === 'succeeded', {
      what: 'the repair job to succeed',
      timeoutMs: 20_000,
      intervalMs: 50,
    });
    await settle();
    expect((await profileByEmail(ws, 'bea@example.com')).total_spend).toBe(45);
    const orders = await svc.call('GET', `/tenant/orders?profile_id=${bea}`, { key: ws.adminKey });
    expect(orders.body.data.map((o: { order_id: string }) => o.order_id)).toEqual(['old-1']);
  });
});
