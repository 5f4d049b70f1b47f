import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../../../test/harness';
import { newSortableId } from '../../platform/ids';
import { applyOrderEvent, applyOrderEvents, type OrderEvent, reassignOrders } from './commerce.service';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc?.close());

const db = () => svc.rt.deps.db;

async function newProfile(workspaceId = svc.ws.id): Promise<string> {
  const id = randomUUID();
  await db().query('INSERT INTO profiles (id, workspace_id) VALUES ($1, $2)', [id, workspaceId]);
  return id;
}

const day = (n: number) => new Date(Date.UTC(2025, 0, 1) + n * 86_400_000);

/** Applies one order event as the worker would: in a transaction of its own. */
function order(
  profileId: string,
  payload: Record<string, unknown>,
  occurredAt = day(0),
  workspaceId = svc.ws.id,
) {
  return db().transaction((tx) =>
    applyOrderEvent(tx, { workspaceId, profileId, eventId: newSortableId('evt'), occurredAt, payload }),
  );
}

async function spendOf(profileId: string): Promise<string> {
  const { rows } = await db().query<{ s: string }>(
    'SELECT total_spend::text AS s FROM profiles WHERE id = $1',
    [profileId],
  );
  return rows[0]!.s;
}

/** The completed-order summary kept on the profile row for segment conditions (migration 0021). */
async function summaryOf(profileId: string) {
  const { rows } = await db().query<{ n: number; first_at: Date | null; last_at: Date | null }>(
    'SELECT completed_orders AS n, completed_first_at AS first_at, completed_last_at AS last_at FROM profiles WHERE id = $1',
    [profileId],
  );
  return rows[0]!;
}

async function completedFacts(orderId: string): Promise<number> {
  const { rows } = await db().query<{ n: number }>(
    `SELECT count(*)::int AS n FROM outbox WHERE type = 'order.completed' AND data->>'order_id' = $1`,
    [orderId],
  );
  return rows[0]!.n;
}

describe('order events', () => {
  it('create the order, its products, the profile’s total_spend and one order.completed fact', async () => {
    const p = await newProfile();
    const outcome = await order(p, {
      order_id: 'ORD-1',
      total: 59.97,
      items: [
        { product_id: 'mug', name: 'Mug', price: 12.99, quantity: 3, category: 'kitchen' },
        { product_id: 'tea', name: 'Tea', price: 21, quantity: 1, category: 'food' },
      ],
    });
    expect(outcome).toBe('created');
    expect(await spendOf(p)).toBe('59.97');
    expect(await completedFacts('ORD-1')).toBe(1);

    const res = await svc.call('GET', `/tenant/orders?profile_id=${p}`);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([
      expect.objectContaining({
        order_id: 'ORD-1',
        profile_id: p,
        status: 'completed',
        total: 59.97,
        currency: 'USD',
        occurred_at: day(0).toISOString(),
      }),
    ]);
    expect(res.body.data[0].items).toHaveLength(2);
    const mug = await svc.call('GET', '/tenant/products/mug');
    expect(mug.body.data).toMatchObject({
      product_id: 'mug',
      name: 'Mug',
      price: 12.99,
      currency: 'USD',
      category: 'kitchen',
      source: 'orders',
    });
  });

  it('treat a re-sent order as already applied', async () => {
    const p = await newProfile();
    const payload = { order_id: 'ORD-2', total: 10 };
    expect(await order(p, payload)).toBe('created');
    expect(await order(p, payload)).toBe('unchanged');
    expect(await order(p, { ...payload, total: 999 })).toBe('unchanged');
    expect(await spendOf(p)).toBe('10.00');
    expect(await completedFacts('ORD-2')).toBe(1);
  });

  it('move an order through statuses: only completed counts, and order.completed fires once', async () => {
    const p = await newProfile();
    await order(p, { order_id: 'ORD-KEEP', total: 5 });
    expect(await order(p, { order_id: 'ORD-3', total: 20, status: 'pending' }, day(1))).toBe('created');
    expect(await spendOf(p)).toBe('5.00');
    expect(await completedFacts('ORD-3')).toBe(0);

    expect(await summaryOf(p)).toEqual({ n: 1, first_at: day(0), last_at: day(0) });

    expect(await order(p, { order_id: 'ORD-3', total: 20, status: 'completed' }, day(2))).toBe('updated');
    expect(await spendOf(p)).toBe('25.00');
    expect(await completedFacts('ORD-3')).toBe(1);
    // The order's own time (day 1), not its completion's, is what windows measure.
    expect(await summaryOf(p)).toEqual({ n: 2, first_at: day(0), last_at: day(1) });

    expect(await order(p, { order_id: 'ORD-3', total: 20, status: 'refunded' }, day(3))).toBe('updated');
    expect(await spendOf(p)).toBe('5.00');
    expect(await summaryOf(p)).toEqual({ n: 1, first_at: day(0), last_at: day(0) });

    expect(await order(p, { order_id: 'ORD-3', total: 20, status: 'completed' }, day(4))).toBe('updated');
    expect(await spendOf(p)).toBe('25.00');
    expect(await completedFacts('ORD-3')).toBe(1);
  });

  it('never let a late event undo a newer status', async () => {
    const p = await newProfile();
    await order(p, { order_id: 'ORD-4', total: 8 }, day(1));
    await order(p, { order_id: 'ORD-4', total: 8, status: 'refunded' }, day(5));
    expect(await order(p, { order_id: 'ORD-4', total: 8, status: 'pending' }, day(3))).toBe('stale');
    const res = await svc.call('GET', '/tenant/orders/ORD-4');
    expect(res.body.data.status).toBe('refunded');
    expect(await spendOf(p)).toBe('0.00');
  });

  it('add money exactly, with no floating-point drift', async () => {
    const p = await newProfile();
    for (let i = 0; i < 30; i++) await order(p, { order_id: `DRIFT-${i}`, total: i % 2 ? 0.1 : 0.2 });
    expect(await spendOf(p)).toBe('4.50');
  });

  it('ignore unusable payloads without failing the transaction', async () => {
    const p = await newProfile();
    for (const payload of [
      {},
      { order_id: 'X' },
      { order_id: 'X', total: -5 },
      { order_id: 'X', total: 1, currency: 'nope' },
    ]) {
      expect(await order(p, payload)).toBe('ignored');
    }
    expect(await spendOf(p)).toBe('0.00');
    expect((await svc.call('GET', '/tenant/orders/X')).status).toBe(404);
  });

  it('keep one order per order_id in each workspace', async () => {
    const other = await svc.newWorkspace('commerce-other');
    const a = await newProfile();
    const b = await newProfile(other.id);
    expect(await order(a, { order_id: 'SHARED', total: 1 })).toBe('created');
    expect(await order(b, { order_id: 'SHARED', total: 2 }, day(0), other.id)).toBe('created');
    const mine = await svc.call('GET', '/tenant/orders/SHARED');
    const theirs = await svc.call('GET', '/tenant/orders/SHARED', { key: other.adminKey });
    expect([mine.body.data.total, theirs.body.data.total]).toEqual([1, 2]);
  });
});

describe('products from order items', () => {
  it('follow the newest order, never an older one, and never an editor’s product', async () => {
    const p = await newProfile();
    const item = (price: number, name = 'Lamp') => ({ product_id: 'lamp', name, price, quantity: 1 });
    await order(p, { order_id: 'L1', total: 30, items: [item(30)] }, day(10));
    await order(p, { order_id: 'L2', total: 35, items: [item(35, 'Desk lamp')] }, day(12));
    await order(p, { order_id: 'L3', total: 25, items: [item(25, 'Old lamp')] }, day(11));
    let lamp = await svc.call('GET', '/tenant/products/lamp');
    expect(lamp.body.data).toMatchObject({ name: 'Desk lamp', price: 35, source: 'orders' });

    await svc.call('PATCH', '/tenant/products/lamp', { body: { price: 40 } });
    await order(p, { order_id: 'L4', total: 20, currency: 'EUR', items: [item(20, 'Sale lamp')] }, day(20));
    lamp = await svc.call('GET', '/tenant/products/lamp');
    expect(lamp.body.data).toMatchObject({ name: 'Desk lamp', price: 40, currency: 'USD', source: 'api' });
  });

  it('keep each field from its newest mention, whatever order the mentions arrive in', async () => {
    const p = await newProfile();
    const vase = (name: string, category?: string) => ({
      product_id: 'vase',
      name,
      price: 9,
      quantity: 1,
      ...(category ? { category } : {}),
    });
    // The newest mention first, then an older one with the same name: nothing moves back.
    await order(p, { order_id: 'V1', total: 9, items: [vase('Vase')] }, day(5));
    await order(p, { order_id: 'V2', total: 9, items: [vase('Vase')] }, day(7));
    await order(p, { order_id: 'V3', total: 9, items: [vase('Old vase', 'decor')] }, day(6));
    const vaseNow = await svc.call('GET', '/tenant/products/vase');
    // The name of day 7 stays; the category no newer mention gave comes from day 6.
    expect(vaseNow.body.data).toMatchObject({ name: 'Vase', category: 'decor', source: 'orders' });
  });
});

describe('a batch of order events (as the worker applies them)', () => {
  const event = (
    profileId: string,
    payload: Record<string, unknown>,
    occurredAt = day(0),
    workspaceId = svc.ws.id,
  ): OrderEvent => ({ workspaceId, profileId, eventId: newSortableId('evt'), occurredAt, payload });
  const batch = (events: OrderEvent[]) => db().transaction((tx) => applyOrderEvents(tx, events));

  it('gives each event the outcome it would have alone, in order', async () => {
    const p = await newProfile();
    await order(p, { order_id: 'B-OLD', total: 5, status: 'pending' }, day(1));
    const outcomes = await batch([
      event(p, { order_id: 'B-1', total: 10 }, day(2)),
      event(p, { order_id: 'B-OLD', total: 5, status: 'completed' }, day(3)),
      event(p, { total: 1 }),
      event(p, { order_id: 'B-1', total: 10, status: 'refunded' }, day(4)),
      event(p, { order_id: 'B-2', total: 7.5, status: 'pending' }, day(2)),
      event(p, { order_id: 'B-1', total: 10, status: 'refunded' }, day(5)),
    ]);
    expect(outcomes).toEqual(['created', 'updated', 'ignored', 'updated', 'created', 'unchanged']);
    // B-1 was created completed, then refunded in the same batch; B-OLD completed; B-2 is pending.
    expect(await spendOf(p)).toBe('5.00');
    expect(await completedFacts('B-1')).toBe(1);
    expect(await completedFacts('B-OLD')).toBe(1);
    expect(await completedFacts('B-2')).toBe(0);
    const b1 = await svc.call('GET', '/tenant/orders/B-1');
    expect(b1.body.data).toMatchObject({ status: 'refunded', total: 10 });
  });

  it('reports completions in the order of their events, an existing order’s before a new one’s after it', async () => {
    const p = await newProfile();
    await order(p, { order_id: 'F-OLD', total: 5, status: 'pending' }, day(1));
    await batch([
      event(p, { order_id: 'F-OLD', total: 5, status: 'completed' }, day(2)),
      event(p, { order_id: 'F-NEW', total: 3 }, day(3)),
    ]);
    const { rows } = await db().query<{ order_id: string }>(
      `SELECT data->>'order_id' AS order_id FROM outbox
        WHERE type = 'order.completed' AND data->>'order_id' IN ('F-OLD', 'F-NEW') ORDER BY seq`,
    );
    expect(rows.map((r) => r.order_id)).toEqual(['F-OLD', 'F-NEW']);
  });

  it('sums every new completed order of a profile into total_spend', async () => {
    const [a, b] = [await newProfile(), await newProfile()];
    await batch([
      event(a, { order_id: 'S-1', total: 0.1 }),
      event(b, { order_id: 'S-2', total: 3 }),
      event(a, { order_id: 'S-3', total: 0.2 }),
    ]);
    expect([await spendOf(a), await spendOf(b)]).toEqual(['0.30', '3.00']);
  });

  it('describes each product once from its newest mention, filling gaps from older ones', async () => {
    const p = await newProfile();
    const lamp = (o: Record<string, unknown>) => ({ product_id: 'batch-lamp', quantity: 1, ...o });
    await batch([
      event(
        p,
        { order_id: 'P-2', total: 1, currency: 'EUR', items: [lamp({ name: 'New', price: 9 })] },
        day(5),
      ),
      event(
        p,
        { order_id: 'P-1', total: 1, items: [lamp({ name: 'Old', price: 8, category: 'light' })] },
        day(4),
      ),
      event(p, { order_id: 'P-3', total: 1, items: [lamp({ name: 'Newest' })] }, day(6)),
    ]);
    const res = await svc.call('GET', '/tenant/products/batch-lamp');
    expect(res.body.data).toMatchObject({ name: 'Newest', price: 9, currency: 'EUR', category: 'light' });
    // An older batch afterwards changes nothing.
    await batch([
      event(p, { order_id: 'P-0', total: 1, items: [lamp({ name: 'Ancient', price: 1 })] }, day(1)),
    ]);
    expect((await svc.call('GET', '/tenant/products/batch-lamp')).body.data).toMatchObject({
      name: 'Newest',
    });
  });

  it('keeps workspaces apart within one batch', async () => {
    const other = await svc.newWorkspace('commerce-batch-other');
    const [a, b] = [await newProfile(), await newProfile(other.id)];
    const outcomes = await batch([
      event(a, { order_id: 'W-1', total: 1, items: [{ product_id: 'w-thing', name: 'Mine', quantity: 1 }] }),
      event(
        b,
        { order_id: 'W-1', total: 2, items: [{ product_id: 'w-thing', name: 'Theirs', quantity: 1 }] },
        day(0),
        other.id,
      ),
    ]);
    expect(outcomes).toEqual(['created', 'created']);
    const mine = await svc.call('GET', '/tenant/products/w-thing');
    const theirs = await svc.call('GET', '/tenant/products/w-thing', { key: other.adminKey });
    expect([mine.body.data.name, theirs.body.data.name]).toEqual(['Mine', 'Theirs']);
    expect([await spendOf(a), await spendOf(b)]).toEqual(['1.00', '2.00']);
  });
});

describe('profile merges and erasure', () => {
  it('re-point merged-away profiles’ orders to the survivor and recompute both totals', async () => {
    const survivor = await newProfile();
    const gone = await newProfile();
    await order(survivor, { order_id: 'M1', total: 10 }, day(5));
    await order(gone, { order_id: 'M2', total: 15.5 }, day(2));
    await order(gone, { order_id: 'M3', total: 4, status: 'pending' }, day(9));

    await db().transaction((tx) => reassignOrders(tx, svc.ws.id, [{ from: gone, to: survivor }]));
    expect(await spendOf(survivor)).toBe('25.50');
    expect(await spendOf(gone)).toBe('0.00');
    expect(await summaryOf(survivor)).toEqual({ n: 2, first_at: day(2), last_at: day(5) });
    expect(await summaryOf(gone)).toEqual({ n: 0, first_at: null, last_at: null });
    await db().query('UPDATE profiles SET merged_into = $1 WHERE id = $2', [survivor, gone]);

    // The merged-away id still finds the orders, now the survivor's.
    const res = await svc.call('GET', `/tenant/orders?profile_id=${gone}`);
    expect(res.body.data.map((o: { order_id: string }) => o.order_id).sort()).toEqual(['M1', 'M2', 'M3']);
    expect(new Set(res.body.data.map((o: { profile_id: string }) => o.profile_id))).toEqual(
      new Set([survivor]),
    );
  });

  it('re-point the merges of a whole batch at once, each to its own survivor', async () => {
    const [s1, s2, g1, g2, g3, idle] = [
      await newProfile(),
      await newProfile(),
      await newProfile(),
      await newProfile(),
      await newProfile(),
      await newProfile(),
    ];
    await order(g1, { order_id: 'R1', total: 1 });
    await order(g2, { order_id: 'R2', total: 2 });
    await order(g3, { order_id: 'R3', total: 4 });
    await order(s2, { order_id: 'R4', total: 8 });
    await db().transaction((tx) =>
      reassignOrders(tx, svc.ws.id, [
        { from: g1, to: s1 },
        { from: g2, to: s1 },
        { from: g3, to: s2 },
        { from: idle, to: s2 },
        { from: s1, to: s1 },
      ]),
    );
    expect(await Promise.all([s1, s2, g1, g2, g3].map(spendOf))).toEqual([
      '3.00',
      '12.00',
      '0.00',
      '0.00',
      '0.00',
    ]);
  });

  it('keep an erased profile’s orders without their personal link', async () => {
    const p = await newProfile();
    await order(p, { order_id: 'E1', total: 3 });
    await db().query('DELETE FROM profiles WHERE id = $1', [p]);
    const res = await svc.call('GET', '/tenant/orders/E1');
    expect(res.body.data.profile_id).toBeNull();
  });
});

describe('GET /tenant/orders', () => {
  it('pages newest first without repeating or skipping, even when orders arrive meanwhile', async () => {
    const ws = await svc.newWorkspace('paging');
    const p = await newProfile(ws.id);
    // Ties on occurred_at are broken by arrival, so equal times cannot repeat or skip either.
    for (let i = 0; i < 7; i++)
      await order(p, { order_id: `PG-${i}`, total: i }, day(Math.floor(i / 2)), ws.id);
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await svc.call('GET', `/tenant/orders?limit=3${cursor ? `&cursor=${cursor}` : ''}`, {
        key: ws.adminKey,
      });
      expect(res.status).toBe(200);
      seen.push(...res.body.data.map((o: { order_id: string }) => o.order_id));
      cursor = res.body.pagination.next_cursor;
      if (pages === 0) await order(p, { order_id: 'PG-new', total: 1 }, day(30), ws.id);
      pages++;
    } while (cursor);
    expect(seen).toEqual(['PG-6', 'PG-5', 'PG-4', 'PG-3', 'PG-2', 'PG-1', 'PG-0']);
  });

  it('filters by status, and finds nothing for an unknown or foreign profile', async () => {
    const ws = await svc.newWorkspace('filters');
    const p = await newProfile(ws.id);
    await order(p, { order_id: 'S1', total: 1, status: 'pending' }, day(0), ws.id);
    await order(p, { order_id: 'S2', total: 1 }, day(0), ws.id);
    const pending = await svc.call('GET', '/tenant/orders?status=pending', { key: ws.adminKey });
    expect(pending.body.data.map((o: { order_id: string }) => o.order_id)).toEqual(['S1']);
    const foreign = await svc.call('GET', `/tenant/orders?profile_id=${p}`);
    expect(foreign.body).toMatchObject({ data: [], pagination: { has_more: false, next_cursor: null } });
  });

  it.each([
    ['profile_id=not-a-uuid', '/profile_id'],
    ['limit=0', '/limit'],
    ['limit=501', '/limit'],
    ['colour=red', '/colour'],
  ])('refuses ?%s', async (query, path) => {
    const res = await svc.call('GET', `/tenant/orders?${query}`);
    expect(res.status).toBe(400);
    expect(res.body.details.map((d: { path: string }) => d.path)).toContain(path);
  });

  it('refuses a cursor of another collection', async () => {
    const ws = await svc.newWorkspace('cursor');
    for (let i = 0; i < 2; i++) {
      await svc.call('POST', '/tenant/products', {
        key: ws.adminKey,
        body: { product_id: `c${i}`, name: 'c' },
      });
    }
    const products = await svc.call('GET', '/tenant/products?limit=1', { key: ws.adminKey });
    const res = await svc.call('GET', `/tenant/orders?cursor=${products.body.pagination.next_cursor}`, {
      key: ws.adminKey,
    });
    expect(res.status).toBe(400);
    expect(res.body.error_code).toBe('INVALID_CURSOR');
  });
});

describe('product endpoints', () => {
  it('create, upsert, patch, list and delete a product', async () => {
    const ws = await svc.newWorkspace('catalogue');
    const editor = await ws.key(['editor']);
    const created = await svc.call('POST', '/tenant/products', {
      key: editor,
      body: { product_id: 'SKU 1', name: 'Kettle', price: 49.5, category: 'kitchen' },
    });
    expect(created.status).toBe(200);
    expect(created.body.data).toMatchObject({
      product_id: 'SKU 1',
      name: 'Kettle',
      price: 49.5,
      currency: 'USD',
      category: 'kitchen',
      source: 'api',
    });
    const upserted = await svc.call('POST', '/tenant/products', {
      key: editor,
      body: { product_id: 'SKU 1', name: 'Steel kettle', currency: 'EUR' },
    });
    expect(upserted.body.data).toMatchObject({
      name: 'Steel kettle',
      price: 49.5,
      currency: 'EUR',
      category: 'kitchen',
    });
    expect(upserted.body.data.created_at).toBe(created.body.data.created_at);

    const patched = await svc.call('PATCH', `/tenant/products/${encodeURIComponent('SKU 1')}`, {
      key: editor,
      body: { category: null, price: 45 },
    });
    expect(patched.body.data).toMatchObject({
      name: 'Steel kettle',
      price: 45,
      currency: 'EUR',
      category: null,
    });

    await svc.call('POST', '/tenant/products', {
      key: editor,
      body: { product_id: 'SKU 2', name: 'Cup', category: 'kitchen' },
    });
    await svc.call('POST', '/tenant/products', {
      key: editor,
      body: { product_id: 'SKU 3', name: 'Tea', category: 'food' },
    });
    const kitchen = await svc.call('GET', '/tenant/products?category=kitchen', { key: editor });
    expect(kitchen.body.data.map((p: { product_id: string }) => p.product_id)).toEqual(['SKU 2']);
    const page1 = await svc.call('GET', '/tenant/products?limit=2', { key: editor });
    const page2 = await svc.call(
      'GET',
      `/tenant/products?limit=2&cursor=${page1.body.pagination.next_cursor}`,
      {
        key: editor,
      },
    );
    expect([...page1.body.data, ...page2.body.data].map((p: { product_id: string }) => p.product_id)).toEqual(
      ['SKU 1', 'SKU 2', 'SKU 3'],
    );
    expect(page2.body.pagination).toEqual({ limit: 2, next_cursor: null, has_more: false });

    const del = await svc.call('DELETE', '/tenant/products/SKU%202', { key: editor });
    expect(del.body).toEqual({ status: 'success', data: { product_id: 'SKU 2', deleted: true } });
    expect((await svc.call('GET', '/tenant/products/SKU%202', { key: editor })).status).toBe(404);
    expect((await svc.call('DELETE', '/tenant/products/SKU%202', { key: editor })).status).toBe(404);
  });

  it('answers 404 for another workspace’s product and leaves it alone', async () => {
    const other = await svc.newWorkspace('foreign-products');
    await svc.call('POST', '/tenant/products', {
      key: other.adminKey,
      body: { product_id: 'theirs', name: 'T' },
    });
    expect((await svc.call('GET', '/tenant/products/theirs')).status).toBe(404);
    expect((await svc.call('PATCH', '/tenant/products/theirs', { body: { name: 'mine' } })).status).toBe(404);
    expect((await svc.call('DELETE', '/tenant/products/theirs')).status).toBe(404);
    const still = await svc.call('GET', '/tenant/products/theirs', { key: other.adminKey });
    expect(still.body.data.name).toBe('T');
  });

  it('lets viewers read but not write', async () => {
    const viewer = await svc.ws.key(['viewer']);
    expect((await svc.call('GET', '/tenant/products', { key: viewer })).status).toBe(200);
    const res = await svc.call('POST', '/tenant/products', {
      key: viewer,
      body: { product_id: 'v', name: 'v' },
    });
    expect(res.status).toBe(403);
    expect(res.body.error_code).toBe('INSUFFICIENT_SCOPE');
  });

  it.each([
    [{ name: 'x' }, '/product_id'],
    [{ product_id: ' padded ', name: 'x' }, '/product_id'],
    [{ product_id: 'x'.repeat(201), name: 'x' }, '/product_id'],
    [{ product_id: 'a', name: '' }, '/name'],
    [{ product_id: 'a', name: 'nul\u0000byte' }, '/name'],
    [{ product_id: 'a', name: 'x', price: -1 }, '/price'],
    [{ product_id: 'a', name: 'x', price: '10' }, '/price'],
    [{ product_id: 'a', name: 'x', currency: 'usd' }, '/currency'],
    [{ product_id: 'a', name: 'x', stock: 3 }, '/stock'],
  ])('refuses product %j at %s', async (body, path) => {
    const res = await svc.call('POST', '/tenant/products', { body });
    expect(res.status).toBe(400);
    expect(res.body.error_code).toBe('VALIDATION_ERROR');
    expect(res.body.details.map((d: { path: string }) => d.path)).toContain(path);
  });

  it('refuses an empty patch and a NUL byte in a path or filter', async () => {
    await svc.call('POST', '/tenant/products', { body: { product_id: 'np', name: 'np' } });
    expect((await svc.call('PATCH', '/tenant/products/np', { body: {} })).status).toBe(400);
    expect((await svc.call('GET', '/tenant/products/a%00b')).status).toBe(400);
    expect((await svc.call('GET', '/tenant/products?category=a%00b')).status).toBe(400);
  });
});
