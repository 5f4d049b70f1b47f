import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../../../test/expect-error';
import { startTestService, type TestService } from '../../../test/harness';
import { MAX_AMOUNT, MAX_ITEMS, MAX_TEXT } from '../ingest';
import { insertTestEvents, waitProcessed } from '../processing/processing.test-kit';
import { boundedItems, FACT_ITEMS_BYTES } from './order-events';

/**
 * Numbers that cannot be stored never vanish: amounts and quantities are bounded at the door (400
 * with the JSON pointer, single events, batches and the product API), and an order that still
 * cannot be recorded later is a dead letter with its reason, never only a log line.
 */
let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc?.close());

const orderEvent = (payload: Record<string, unknown>, identity = 'buyer@example.com') => ({
  event_type: 'order',
  event_name: 'Order Completed',
  identity,
  payload,
});

const raw = (method: string, url: string, rawBody: string) => svc.call(method, url, { rawBody });

describe('amounts and quantities at the door', () => {
  it.each([
    ['a total of 1e308', '{"order_id":"n1","total":1e308}', '/payload/total'],
    ['a total of 1e16 (numeric(18,2) overflow)', '{"order_id":"n2","total":1e16}', '/payload/total'],
    ['a total just over the maximum', `{"order_id":"n3","total":${MAX_AMOUNT + 0.01}}`, '/payload/total'],
    ['a total of 1e400 (Infinity)', '{"order_id":"n4","total":1e400}', '/payload/total'],
    [
      'an item price of 1e300',
      '{"order_id":"n5","total":1,"items":[{"product_id":"p","price":1e300}]}',
      '/payload/items/0/price',
    ],
    [
      'an item price of 1e400',
      '{"order_id":"n6","total":1,"items":[{"product_id":"p","price":1e400}]}',
      '/payload/items/0/price',
    ],
    [
      'a quantity over 1,000,000',
      '{"order_id":"n7","total":1,"items":[{"product_id":"p","quantity":1000001}]}',
      '/payload/items/0/quantity',
    ],
  ])('refuses an order event with %s: 400 at %s', async (_what, payload, path) => {
    const body = `{"event_type":"order","event_name":"o","identity":"b@example.com","payload":${payload}}`;
    const res = await raw('POST', '/api/ingest', body);
    expectError(res, 400, 'VALIDATION_ERROR');
    expect(res.body.details.map((d: { path: string }) => d.path)).toContain(path);
  });

  it('refuses a non-finite number anywhere in an event, not only in orders (1e400 is not null)', async () => {
    const res = await raw(
      'POST',
      '/api/ingest',
      '{"event_type":"track","event_name":"t","identity":"b@example.com","payload":{"n":-1e400}}',
    );
    expectError(res, 400, 'VALIDATION_ERROR');
    expect(res.body.details).toEqual([{ path: '/payload/n', message: expect.stringMatching(/finite/) }]);
  });

  it('names the batch item: /3/payload/total', async () => {
    const ok = orderEvent({ order_id: 'b-ok', total: 1 });
    const res = await svc.call('POST', '/tenant/ingest/batch', {
      body: [ok, ok, ok, orderEvent({ order_id: 'b-bad', total: 1e308 })],
    });
    expectError(res, 400, 'VALIDATION_ERROR');
    expect(res.body.details.map((d: { path: string }) => d.path)).toEqual(['/3/payload/total']);
  });

  it(`takes ${MAX_ITEMS} line items and refuses one more (the one cap, docs/api.md), stores the status it names`, async () => {
    const items = (n: number) => Array.from({ length: n }, (_, i) => ({ product_id: `cap-${i}` }));
    const over = await svc.call('POST', '/api/ingest', {
      body: orderEvent({ order_id: 'cap-over', total: 1, items: items(MAX_ITEMS + 1) }),
    });
    expectError(over, 400, 'VALIDATION_ERROR');
    expect(over.body.details).toEqual([
      { path: '/payload/items', message: `must have at most ${MAX_ITEMS} items` },
    ]);
    const shipped = await svc.call('POST', '/api/ingest', {
      body: orderEvent({ order_id: 'cap-st', total: 1, status: 'shipped' }),
    });
    expectError(shipped, 400, 'VALIDATION_ERROR');
    expect(shipped.body.details.map((d: { path: string }) => d.path)).toEqual(['/payload/status']);
    const at = await svc.call('POST', '/api/ingest', {
      body: orderEvent({ order_id: 'cap-at', total: 1, status: 'Pending', items: items(MAX_ITEMS) }),
    });
    expect(at.status, at.text).toBe(202);
    const { rows } = await svc.rt.deps.db.query<{ payload: { status: string } }>(
      'SELECT payload FROM events WHERE id = $1',
      [at.body.event_id],
    );
    expect(rows[0]!.payload.status).toBe('pending');
  });

  it('accepts the documented maxima exactly, and stores them to the cent on both engines', async () => {
    const res = await svc.call('POST', '/api/ingest', {
      body: orderEvent(
        {
          order_id: 'max-1',
          total: MAX_AMOUNT,
          items: [{ product_id: 'max-p', price: MAX_AMOUNT, quantity: 1_000_000 }],
        },
        'max@example.com',
      ),
    });
    expect(res.status, res.text).toBe(202);
    await waitProcessed(svc.rt.deps.db);
    const order = await svc.call('GET', '/tenant/orders/max-1');
    expect(order.status, order.text).toBe(200);
    expect(order.body.data).toMatchObject({ total: MAX_AMOUNT });
    expect(order.body.data.items[0]).toMatchObject({ price: MAX_AMOUNT, quantity: 1_000_000 });
  });

  it.each([
    ['POST', '/tenant/products', { product_id: 'big', name: 'Big', price: MAX_AMOUNT * 10 }],
    ['POST', '/tenant/products', { product_id: 'big', name: 'Big', price: 1e300 }],
  ])('refuses a product price over the maximum: %s %s', async (method, url, body) => {
    const res = await svc.call(method, url, { body });
    expectError(res, 400, 'VALIDATION_ERROR');
    expect(res.body.details.map((d: { path: string }) => d.path)).toContain('/price');
  });

  it('refuses a product price of 1e400 (not null) and a patch over the maximum', async () => {
    const res = await raw('POST', '/tenant/products', '{"product_id":"inf","name":"Inf","price":1e400}');
    expectError(res, 400, 'VALIDATION_ERROR');
    expect(res.body.details.map((d: { path: string }) => d.path)).toContain('/price');
    expect(
      (await svc.call('POST', '/tenant/products', { body: { product_id: 'pp', name: 'P' } })).status,
    ).toBe(200);
    const patch = await svc.call('PATCH', '/tenant/products/pp', { body: { price: 1e13 } });
    expectError(patch, 400, 'VALIDATION_ERROR');
  });
});

describe('an order the worker cannot record', () => {
  it('is a dead letter with its reason (not only a warning), and the event still counts for its profile', async () => {
    const db = svc.rt.deps.db;
    // By another road than the ingest rules (an old row, a direct insert): a total over the maximum.
    await insertTestEvents(
      db,
      svc.ws.id,
      [
        {
          identity: 'late@example.com',
          event_type: 'order',
          event_name: 'Order Completed',
          payload: { order_id: 'too-big', total: 1e308 },
        },
      ],
      { unchecked: true },
    );
    await waitProcessed(db);
    expect((await svc.call('GET', '/tenant/orders/too-big')).status).toBe(404);
    const letters = await svc.call('GET', '/tenant/dead-letters?limit=500');
    expect(letters.status, letters.text).toBe(200);
    const letter = letters.body.data.find(
      (d: { event: { payload: { order_id?: string } } }) => d.event.payload.order_id === 'too-big',
    );
    expect(letter, letters.text).toBeDefined();
    expect(letter.reason).toBe(`order not recorded: total must be a number from 0 to ${MAX_AMOUNT}`);
    const profile = await svc.call('GET', '/tenant/profiles?identity=late@example.com');
    expect(profile.body.data).toHaveLength(1);
  });
});

describe('the items an order.completed fact carries', () => {
  it('are all of them when they fit, and the first that fit within 32 KiB with a count of the rest', () => {
    const item = (i: number) => ({
      product_id: `p${i}-${'x'.repeat(MAX_TEXT - 10)}`,
      name: 'n'.repeat(MAX_TEXT),
      price: MAX_AMOUNT,
      quantity: 1,
      category: 'c'.repeat(MAX_TEXT),
    });
    const few = Array.from({ length: 3 }, (_, i) => item(i));
    expect(boundedItems(few)).toEqual({ items: few, items_omitted: 0 });
    const all = Array.from({ length: MAX_ITEMS }, (_, i) => item(i));
    const bounded = boundedItems(all);
    expect(Buffer.byteLength(JSON.stringify(bounded.items))).toBeLessThanOrEqual(FACT_ITEMS_BYTES);
    expect(bounded.items).toEqual(all.slice(0, bounded.items.length));
    expect(bounded.items.length + bounded.items_omitted).toBe(MAX_ITEMS);
    expect(bounded.items_omitted).toBeGreaterThan(0);
  });
});
