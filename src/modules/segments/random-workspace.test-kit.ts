import fc from 'fast-check';
import * as arb from './query/arbitraries.test-kit';
import { at, cents, eventPayload, object, TEXTS } from './query/profile-arbitraries.test-kit';
import { NOW } from './query/query.test-kit';

/**
 * A random workspace sent through the real API, and random queries over it: the pools of the
 * query property tests (query/arbitraries.test-kit.ts), so that the queries' names, paths and values
 * often hit. Times are drawn around the kits' fixed NOW and moved to the real clock (`shift`), since
 * the API stamps `within_days` windows from the server's clock and refuses events far in the future.
 */

/** One event as `POST /tenant/ingest/batch` takes it. */
export interface IngestEvent {
  identity: string;
  event_type: 'identify' | 'track' | 'page' | 'order';
  event_name: string;
  timestamp: string;
  payload: Record<string, unknown>;
}

/** The names queries ask for (arbitraries.test-kit.ts) and two they never do. */
const NAMES = ['Product Viewed', 'Signed Up', 'Checkout', 'Scale'] as const;

const item = fc.record(
  {
    product_id: fc.constantFrom('p1', 'p2', 'p3'),
    category: fc.constantFrom('shoes', 'hats'),
    name: fc.constant('thing'),
    price: cents(1000),
    quantity: fc.integer({ min: 1, max: 3 }),
  },
  { requiredKeys: ['product_id', 'price', 'quantity'] },
);

/**
 * A person's events: one identify (their traits: the attribute pools, first and last names),
 * 4–7 track or page events with the payload pools (nested objects, arrays of objects and of arrays,
 * long strings, one event in ten too big for the property table), and up to one order.
 */
const person = fc.record({
  traits: object,
  first_name: fc.constantFrom(...TEXTS.filter((t) => t !== '')),
  last_name: fc.option(fc.constantFrom(...TEXTS.filter((t) => t !== '')), { nil: undefined }),
  events: fc.array(
    fc.record({
      type: fc.constantFrom('track', 'page'),
      name: fc.constantFrom(...NAMES),
      payload: eventPayload,
      at: at(60),
    }),
    { minLength: 4, maxLength: 7 },
  ),
  orders: fc.array(
    fc.record({
      status: fc.constantFrom('completed', 'completed', 'pending', 'refunded', 'cancelled'),
      total: cents(20_000),
      currency: fc.constantFrom('EUR', 'USD'),
      items: fc.array(item, { maxLength: 3 }),
      at: at(60),
    }),
    { maxLength: 1 },
  ),
  signedUp: at(60),
});

/** The events of `profiles` random people (about 7 each), times moved by `shift` ms. */
export function randomWorkspaceEvents(profiles: number, seed: number, shift: number): IngestEvent[] {
  const iso = (d: Date) => new Date(d.getTime() + shift).toISOString();
  const people = fc.sample(person, { numRuns: profiles, seed });
  return people.flatMap((p, i) => {
    const identity = `person${i}@example.com`;
    const traits: Record<string, unknown> = { ...p.traits, first_name: p.first_name };
    if (p.last_name !== undefined) traits.last_name = p.last_name;
    return [
      {
        identity,
        event_type: 'identify',
        event_name: 'Signed Up',
        timestamp: iso(p.signedUp),
        payload: traits,
      },
      ...p.events.map((e) => ({
        identity,
        event_type: e.type,
        event_name: e.name,
        timestamp: iso(e.at),
        payload: e.payload as Record<string, unknown>,
      })),
      ...p.orders.map((o, n) => ({
        identity,
        event_type: 'order',
        event_name: 'Order Completed',
        timestamp: iso(o.at),
        payload: {
          order_id: `o-${i}-${n}`,
          status: o.status,
          total: o.total,
          currency: o.currency,
          items: o.items,
        },
      })),
    ] as IngestEvent[];
  });
}

/**
 * Random queries: half the property tests' trees (fields, attributes, events, orders under
 * and/or/not), half event conditions with `where` tests (every operator, nested and array-index
 * paths), with their times moved by `shift` ms.
 */
export function randomQueries(n: number, seed: number, shift: number): unknown[] {
  const q = fc.oneof(arb.query(), arb.propertyQuery);
  return fc.sample(q, { numRuns: n, seed }).map((x) => shiftTimes(x, shift));
}

const ISO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

/** The query with every time in it (windows, time fields) moved by `ms`. */
export function shiftTimes(q: unknown, ms: number): unknown {
  if (typeof q === 'string' && ISO_TIME.test(q)) return new Date(Date.parse(q) + ms).toISOString();
  if (Array.isArray(q)) return q.map((x) => shiftTimes(x, ms));
  if (typeof q === 'object' && q !== null)
    return Object.fromEntries(Object.entries(q).map(([k, v]) => [k, shiftTimes(v, ms)]));
  return q;
}

/** How far the kits' fixed NOW is from `now` (the real clock), whole seconds. */
export const shiftTo = (now: Date): number => Math.floor((now.getTime() - NOW.getTime()) / 1000) * 1000;
