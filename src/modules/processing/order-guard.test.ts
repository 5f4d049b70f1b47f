import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestService, type TestService } from '../../../test/harness';
import { onlyOn } from '../../../test/skips';
import { createLogger } from '../../platform/logger';
import { insertTestEvents, type TestEvent, waitProcessed } from './processing.test-kit';
import { startProcessingLoop } from './processing.worker';

/**
 * The events of one order are applied in arrival order across workers too: docs/commerce.md takes an
 * order's total, items and profile from the first event for its order_id, for good. Two devices
 * nobody linked share no identifier and no profile, so only the order id can keep an order's later
 * event (held by one loop) from overtaking its first (still being applied by the other).
 */
const ROUNDS = 7;
const BATCH = 1000;

/**
 * 999 page views of other people, then order O completed on device A (the last event of the first
 * batch), then O refunded on device B (alone in the next batch, so the other loop applies it in a
 * few milliseconds while the first is still busy with its thousand).
 */
function story(orderId: string, a: string, b: string): TestEvent[] {
  const t0 = Date.parse('2024-12-01T10:00:00Z');
  const at = (s: number) => new Date(t0 + s * 1000).toISOString();
  const others: TestEvent[] = Array.from({ length: BATCH - 1 }, (_, i) => ({
    anonymous_id: `eeeeeeee-0000-4000-8000-${String(i % 100).padStart(12, '0')}`,
    event_type: 'page',
    event_name: 'Home',
    at: at(0),
  }));
  const order = (status: string, product: string) => ({
    order_id: orderId,
    total: 10,
    status,
    items: [{ product_id: product, price: 10, quantity: 1 }],
  });
  return [
    ...others,
    {
      anonymous_id: a,
      event_type: 'order',
      event_name: 'Order Completed',
      payload: order('completed', 'FIRST'),
      at: at(1),
    },
    {
      anonymous_id: b,
      event_type: 'order',
      event_name: 'Order Refunded',
      payload: order('refunded', 'SECOND'),
      at: at(2),
    },
  ];
}

onlyOn('postgres', 'PGlite runs one transaction at a time').describe('orders across processing loops', () => {
  let svc: TestService;
  beforeAll(async () => {
    // ROLE=api: no worker of the service's own; the test runs the two loops it races.
    svc = await startTestService({ ROLE: 'api' });
  });
  afterAll(async () => svc?.close());

  it('creates an order from its first event though another loop applies the later one from an unlinked device', async () => {
    const db = svc.rt.deps.db;
    const outcomes: unknown[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const [orderId, a, b] = [`O-${randomUUID()}`, randomUUID(), randomUUID()];
      // Written before the loops start, so that both claim at once: one the first thousand, the
      // other the refund.
      await insertTestEvents(db, svc.ws.id, story(orderId, a, b));
      const loop = await startProcessingLoop(db, createLogger('silent'), {
        batchSize: BATCH,
        concurrency: 2,
      });
      try {
        await waitProcessed(db, 60_000);
      } finally {
        await loop.stop();
      }
      const order = (await svc.call('GET', `/tenant/orders/${orderId}`)).body.data;
      const [ofA] = (await svc.call('GET', `/tenant/profiles?identity=${a}`)).body.data;
      outcomes.push({
        items: order.items.map((i: { product_id: string }) => i.product_id),
        profile: order.profile_id === ofA.id ? 'device A' : 'another',
        status: order.status,
      });
    }
    expect(outcomes).toEqual(
      Array.from({ length: ROUNDS }, () => ({ items: ['FIRST'], profile: 'device A', status: 'refunded' })),
    );
  }, 180_000);
});
