import { Ajv, type ErrorObject } from 'ajv';
import addFormats from 'ajv-formats';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkEvent } from '../ingest/ingest.rules';
import { IngestEventSchema, LIMITS } from '../ingest/ingest.schemas';
import { CATALOGUE } from './demo.catalogue';
import { type DemoEvent, generateCustomer, generateDemoEvents } from './demo.generator';
import { createRng } from './prng';

const now = new Date('2025-06-01T12:00:00Z');
const EIGHTEEN_MONTHS = 18 * 30.5 * 86_400_000;
const all = (seed: number, customers: number) => [...generateDemoEvents({ seed, customers, now })];
const dataset = all(7, 400);

/** The ingest path's own validator: the schema (as the app compiles it) plus the ingest rules. */
const validateSchema = addFormats
  .default(new Ajv({ allErrors: true, strict: false }))
  .compile(IngestEventSchema);
const problemsOf = (ev: DemoEvent) => [
  ...(validateSchema(ev)
    ? []
    : (validateSchema.errors ?? []).map((e: ErrorObject) => `${e.instancePath} ${e.message}`)),
  ...checkEvent(ev, '', now.getTime()).map((e) => `${e.instancePath} ${e.message}`),
];

const orders = (events: DemoEvent[]) => events.filter((e) => e.event_type === 'order');
const cents = (x: number) => Math.round(x * 100);

describe('the demo dataset', () => {
  it('is the same for the same seed and different for another', () => {
    expect(all(7, 30)).toEqual(dataset.slice(0, all(7, 30).length));
    expect(all(8, 30)).not.toEqual(all(7, 30));
  });

  it('keeps each customer the same whatever the customer count', () => {
    expect(generateCustomer({ seed: 7, customers: 5, now }, 3)).toEqual(
      generateCustomer({ seed: 7, customers: 5000, now }, 3),
    );
  });

  it('holds only events the ingest endpoint accepts (docs/ingestion.md)', () => {
    const bad = dataset.map((ev) => ({ ev, problems: problemsOf(ev) })).filter((x) => x.problems.length > 0);
    expect(bad.slice(0, 3)).toEqual([]);
    for (const ev of dataset)
      expect(Buffer.byteLength(JSON.stringify(ev))).toBeLessThan(LIMITS.singleBodyBytes);
  });

  it('has browsing, sign-ups, orders and refunds in realistic proportions', () => {
    const count = (type: string) => dataset.filter((e) => e.event_type === type).length;
    const signups = dataset.filter((e) => e.event_name === 'Signed Up').length;
    const buyers = new Set(orders(dataset).map((e) => e.identity)).size;
    const completed = orders(dataset).filter((e) => e.payload.status === 'completed');
    const refunded = orders(dataset).filter((e) => e.payload.status === 'refunded');
    expect(count('page')).toBeGreaterThan(count('track'));
    expect(signups / 400).toBeGreaterThan(0.6);
    expect(signups / 400).toBeLessThan(0.85);
    expect(buyers / signups).toBeGreaterThan(0.6);
    expect(completed.length / buyers).toBeGreaterThan(2); // repeat buyers
    expect(refunded.length).toBeGreaterThan(0);
    expect(refunded.length / completed.length).toBeLessThan(0.1);
    // Every customer leaves at least one event; anonymous visitors only anonymous ones.
    const firstAnon = new Set(dataset.filter((e) => e.message_id.endsWith('-0')).map((e) => e.anonymous_id));
    expect(firstAnon.size).toBe(400);
  });

  it('places every event within the last 18 months, each customer’s in time order', () => {
    for (let i = 0; i < 50; i++) {
      const events = generateCustomer({ seed: 7, customers: 50, now }, i);
      const times = events.map((e) => Date.parse(e.timestamp));
      expect(times).toEqual([...times].sort((a, b) => a - b));
      for (const t of times) {
        expect(t).toBeLessThanOrEqual(now.getTime());
        expect(t).toBeGreaterThanOrEqual(now.getTime() - EIGHTEEN_MONTHS);
      }
    }
  });

  it('gives every order catalogue items that add up exactly to its total', () => {
    const byId = new Map(CATALOGUE.map((p) => [p.product_id, p]));
    for (const ev of orders(dataset)) {
      const items = ev.payload.items as Array<{
        product_id: string;
        price: number;
        quantity: number;
        name: string;
      }>;
      expect(items.length).toBeGreaterThan(0);
      const sum = items.reduce((s, i) => s + cents(i.price) * i.quantity, 0);
      expect(cents(ev.payload.total as number)).toBe(sum);
      for (const i of items) expect(byId.get(i.product_id)).toMatchObject({ name: i.name, price: i.price });
    }
  });

  it('refunds only orders that were completed before, under the same order_id', () => {
    const completedAt = new Map(
      orders(dataset)
        .filter((e) => e.payload.status === 'completed')
        .map((e) => [e.payload.order_id, e.timestamp]),
    );
    for (const r of orders(dataset).filter((e) => e.payload.status === 'refunded')) {
      expect(completedAt.get(r.payload.order_id)! < r.timestamp).toBe(true);
    }
  });

  it('gives every event a unique message_id, so a reload stores nothing twice', () => {
    expect(new Set(dataset.map((e) => e.message_id)).size).toBe(dataset.length);
  });

  it('holds its invariants for any seed', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 32 - 1 }),
        fc.integer({ min: 1, max: 15 }),
        (seed, customers) => {
          const events = all(seed, customers);
          for (const ev of events) {
            expect(problemsOf(ev)).toEqual([]);
            expect(Date.parse(ev.timestamp)).toBeLessThanOrEqual(now.getTime());
          }
          for (const o of orders(events)) {
            const items = o.payload.items as Array<{ price: number; quantity: number }>;
            expect(items.reduce((s, i) => s + cents(i.price) * i.quantity, 0)).toBe(
              cents(o.payload.total as number),
            );
          }
        },
      ),
      { numRuns: 25 },
    );
  });
});

describe('the seeded random source', () => {
  it('draws gamma variates with the right mean, and valid version-4 UUIDs', () => {
    const rng = createRng(123);
    let sum = 0;
    for (let i = 0; i < 20_000; i++) sum += rng.gamma(0.7, 2);
    expect(sum / 20_000).toBeCloseTo(0.35, 1);
    for (let i = 0; i < 100; i++) {
      expect(rng.uuid()).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    }
  });
});
