import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkBatch, checkEvent } from './ingest.rules';
import { MAX_AMOUNT } from './order-payload';

const NOW = Date.UTC(2025, 0, 1);
const paths = (ev: unknown, at = '') => checkEvent(ev, at, NOW).map((e) => e.instancePath);

describe('ingest rules', () => {
  it('require identity or anonymous_id, whichever the event has', () => {
    expect(paths({ event_type: 'track', event_name: 'x' })).toEqual(['/identity']);
    expect(paths({ event_type: 'track', event_name: 'x', identity: 'a@b.co' })).toEqual([]);
    expect(paths({ event_type: 'track', event_name: 'x', anonymous_id: 'f' })).toEqual([]);
  });

  it('prefix every path with the item pointer inside a batch', () => {
    const errors = checkBatch(
      [{ event_type: 'track', event_name: 'x', identity: 'a' }, { event_name: 'y' }],
      NOW,
    );
    expect(errors.map((e) => e.instancePath)).toEqual(['/1/identity']);
  });

  it('allow 24 hours of clock skew and refuse beyond it', () => {
    const at = (ms: number) => ({ identity: 'a', timestamp: new Date(NOW + ms).toISOString() });
    expect(paths(at(24 * 3600_000))).toEqual([]);
    expect(paths(at(24 * 3600_000 + 1000))).toEqual(['/timestamp']);
  });

  it('escape payload keys in pointers (RFC 6901)', () => {
    const long = `c~d${'k'.repeat(200)}`;
    expect(paths({ identity: 'a', payload: { 'a/b': { [long]: 1 } } })).toEqual([
      `/payload/a~1b/c~0d${'k'.repeat(47)}`,
    ]);
  });

  it('refuse a payload over 32 KiB even inside a batch item', () => {
    expect(paths({ identity: 'a', payload: { s: 'é'.repeat(17_000) } })).toEqual(['/payload']);
  });

  it('never throw, whatever JSON they are given (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.jsonValue(), (a, b) => {
        expect(() => checkEvent(a, '', NOW)).not.toThrow();
        expect(() => checkBatch([a, b], NOW)).not.toThrow();
        expect(() => checkEvent({ event_type: 'order', identity: 'x', payload: a }, '', NOW)).not.toThrow();
      }),
    );
  });

  it('bound amounts to what numeric(18,2) holds, and quantities to integers from 1 to 1,000,000', () => {
    const order = (payload: unknown) => ({ event_type: 'order', identity: 'a', payload });
    const item = (fields: object) =>
      order({ order_id: 'o', total: 1, items: [{ product_id: 'p', ...fields }] });
    expect(paths(order({ order_id: 'o', total: MAX_AMOUNT }))).toEqual([]);
    expect(paths(order({ order_id: 'o', total: 1e16 }))).toEqual(['/payload/total']);
    expect(paths(order({ order_id: 'o', total: 1e308 }))).toEqual(['/payload/total']);
    expect(paths(order({ order_id: 'o', total: Number.POSITIVE_INFINITY }))).toEqual(['/payload/total']);
    expect(paths(item({ price: MAX_AMOUNT, quantity: 1_000_000 }))).toEqual([]);
    expect(paths(item({ price: 1e300 }))).toEqual(['/payload/items/0/price']);
    expect(paths(item({ quantity: 1_000_001 }))).toEqual(['/payload/items/0/quantity']);
  });

  it('validate order events field by field', () => {
    const order = (payload: unknown) => ({ event_type: 'order', identity: 'a', payload });
    expect(paths(order({ order_id: 'o', total: 0 }))).toEqual([]);
    expect(paths(order(undefined))).toEqual(['/payload']);
    expect(
      paths(
        order({
          order_id: '',
          total: Number.NaN,
          currency: 'US',
          status: 'done',
          items: [{ product_id: 'p', price: -1, quantity: 0, name: 1, category: 'c'.repeat(201) }, 'x'],
        }),
      ),
    ).toEqual([
      '/payload/order_id',
      '/payload/total',
      '/payload/currency',
      '/payload/status',
      '/payload/items/0/name',
      '/payload/items/0/category',
      '/payload/items/0/price',
      '/payload/items/0/quantity',
      '/payload/items/1',
    ]);
  });
});
