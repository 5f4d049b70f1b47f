import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  checkOrderPayload,
  MAX_AMOUNT,
  MAX_ITEMS,
  MAX_TEXT,
  ORDER_STATUSES,
  productsOf,
  readOrder,
  readOrderPayload,
  withOrderDefaults,
} from './order-payload';

describe('reading an order payload', () => {
  it('applies the documented defaults: USD and completed', () => {
    expect(readOrderPayload({ order_id: 'A1', total: 10 })).toEqual({
      orderId: 'A1',
      total: 10,
      currency: 'USD',
      status: 'completed',
      items: [],
    });
  });

  it('normalizes currency and status case and reads item lines', () => {
    const o = readOrderPayload({
      order_id: 42,
      total: 30,
      currency: 'eur',
      status: ' Refunded ',
      items: [{ product_id: 'p1', name: 'Mug', price: 15, quantity: 2, category: 'kitchen' }],
    });
    expect(o).toMatchObject({ orderId: '42', currency: 'EUR', status: 'refunded' });
    expect(o!.items).toEqual([
      { product_id: 'p1', name: 'Mug', price: 15, quantity: 2, category: 'kitchen' },
    ]);
  });

  it.each([
    ['no payload', null],
    ['an array', [1]],
    ['no order_id', { total: 1 }],
    ['an empty order_id', { order_id: '  ', total: 1 }],
    ['a fractional numeric order_id', { order_id: 1.5, total: 1 }],
    ['no total', { order_id: 'A' }],
    ['a negative total', { order_id: 'A', total: -1 }],
    ['a string total', { order_id: 'A', total: '10' }],
    ['an astronomically large total', { order_id: 'A', total: 1e300 }],
    ['a currency that is not three letters', { order_id: 'A', total: 1, currency: 'DOLLARS' }],
    ['a non-string status', { order_id: 'A', total: 1, status: 3 }],
    ['a status with spaces inside', { order_id: 'A', total: 1, status: 'on hold' }],
    ['a status outside the four', { order_id: 'A', total: 1, status: 'shipped' }],
  ])('refuses an order with %s', (_what, payload) => {
    expect(readOrderPayload(payload)).toBeNull();
  });

  it('says why an order is unusable, for the dead letter', () => {
    expect(readOrder({ order_id: 'A', total: 1e16 })).toEqual({
      problem: `total must be a number from 0 to ${MAX_AMOUNT}`,
    });
    expect(readOrder({ total: 1 })).toEqual({ problem: 'order_id must be a string of 1 to 200 characters' });
    expect(readOrder({ order_id: 'A', total: 1, currency: 'EURO' })).toMatchObject({
      problem: expect.stringMatching(/^currency/),
    });
    expect(readOrder({ order_id: 'A', total: MAX_AMOUNT })).toMatchObject({ order: { total: MAX_AMOUNT } });
  });

  it('keeps the order but drops unusable parts of item lines', () => {
    const o = readOrderPayload({
      order_id: 'A',
      total: 5,
      items: [
        'not an item',
        { product_id: { x: 1 }, name: 7, price: -3, quantity: 0, category: '' },
        { product_id: 'p', name: 'n'.repeat(500) },
      ],
    });
    expect(o!.items).toEqual([
      { product_id: null, name: null, price: null, quantity: 1, category: null },
      { product_id: 'p', name: 'n'.repeat(MAX_TEXT), price: null, quantity: 1, category: null },
    ]);
  });

  it('never throws, and what it returns is always storable', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.jsonValue(),
          fc.record({
            order_id: fc.oneof(fc.string(), fc.integer(), fc.constant(null)),
            total: fc.oneof(fc.double(), fc.integer(), fc.string()),
            currency: fc.oneof(fc.string({ maxLength: 4 }), fc.constant(undefined)),
            status: fc.oneof(fc.string({ maxLength: 60 }), fc.constant(undefined)),
            items: fc.array(
              fc.oneof(fc.jsonValue(), fc.record({ product_id: fc.string(), price: fc.double() })),
            ),
          }),
        ),
        (payload) => {
          const o = readOrderPayload(payload);
          if (o === null) return;
          expect(o.orderId.length).toBeGreaterThan(0);
          expect(o.orderId.length).toBeLessThanOrEqual(MAX_TEXT);
          expect(Number.isFinite(o.total) && o.total >= 0).toBe(true);
          expect(o.currency).toMatch(/^[A-Z]{3}$/);
          expect(ORDER_STATUSES).toContain(o.status);
          for (const i of o.items) {
            expect(Number.isInteger(i.quantity) && i.quantity >= 1).toBe(true);
            expect(i.price === null || (Number.isFinite(i.price) && i.price >= 0)).toBe(true);
          }
        },
      ),
    );
  });
});

/** The rules the door (ingest) and the worker share: one status set, one item cap, one set of defaults. */
describe('the order payload rules', () => {
  const problems = (payload: unknown) => {
    const out: string[] = [];
    checkOrderPayload(payload, (path, message) => out.push(`${path} ${message}`));
    return out;
  };

  it('know four statuses, in any case, at the door and in the reader alike', () => {
    expect(ORDER_STATUSES).toEqual(['pending', 'completed', 'cancelled', 'refunded']);
    for (const status of [...ORDER_STATUSES, ' Completed ', 'REFUNDED']) {
      expect(problems({ order_id: 'A', total: 1, status })).toEqual([]);
      expect(readOrderPayload({ order_id: 'A', total: 1, status })).not.toBeNull();
    }
    for (const status of ['shipped', 'complete', '', 3]) {
      expect(problems({ order_id: 'A', total: 1, status })).toEqual([
        '/payload/status must be one of: pending, completed, cancelled, refunded',
      ]);
      expect(readOrder({ order_id: 'A', total: 1, status })).toEqual({
        problem: 'status must be one of: pending, completed, cancelled, refunded',
      });
    }
  });

  it(`cap line items at ${MAX_ITEMS}: the door refuses more, the reader never reads more`, () => {
    expect(MAX_ITEMS).toBe(500);
    const items = (n: number) => Array.from({ length: n }, (_, i) => ({ product_id: `p${i}` }));
    expect(problems({ order_id: 'A', total: 1, items: items(MAX_ITEMS) })).toEqual([]);
    expect(problems({ order_id: 'A', total: 1, items: items(MAX_ITEMS + 1) })).toEqual([
      `/payload/items must have at most ${MAX_ITEMS} items`,
    ]);
    expect(readOrderPayload({ order_id: 'A', total: 1, items: items(MAX_ITEMS + 1) })!.items).toHaveLength(
      MAX_ITEMS,
    );
  });

  it('apply the defaults in one function, which changes nothing the second time', () => {
    const once = withOrderDefaults({ order_id: 'A', total: 1 });
    expect(once).toEqual({ order_id: 'A', total: 1, currency: 'USD', status: 'completed' });
    expect(withOrderDefaults(once)).toBe(once);
    expect(withOrderDefaults({ order_id: 'A', total: 1, currency: 'eur', status: 'Pending' })).toEqual({
      order_id: 'A',
      total: 1,
      currency: 'EUR',
      status: 'pending',
    });
    // An invalid value is left for the rules to refuse, not replaced by a default.
    expect(withOrderDefaults({ currency: 7, status: 'shipped' })).toMatchObject({
      currency: 7,
      status: 'shipped',
    });
  });
});

describe('products named by an order', () => {
  it('lists each product once, the last line winning, sorted by id for a fixed lock order', () => {
    const line = (product_id: string | null, price: number) => ({
      product_id,
      name: null,
      price,
      quantity: 1,
      category: null,
    });
    const out = productsOf([line('b', 1), line(null, 2), line('a', 3), line('b', 4)]);
    expect(out.map((p) => [p.product_id, p.price])).toEqual([
      ['a', 3],
      ['b', 4],
    ]);
  });
});
