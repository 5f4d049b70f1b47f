import fc from 'fast-check';
import type { EvalEvent, EvalOrder, EvalProfile } from './evaluate';
import { completedSpend, DAY, NOW } from './query.test-kit';
import { EVENT_TYPE_NAMES, ORDER_STATUS_NAMES } from './types';

/**
 * Random profiles and random queries drawn from small pools, so that conditions often hit and
 * often miss. The pools hold the known traps: code point vs UTF-16 order ('😀' vs '\uFF5E'), case,
 * JSON null, numbers and strings that look alike ('10' vs 10), nested arrays, empty strings.
 */
export const STRINGS = ['pro', 'Pro', 'free', '', 'ann', 'an', '10', '😀', '\uFF5E', 'shoes', 'a.b'];
export const NUMBERS = [0, 1, 2.5, 10, -3, 100, 0.1, 1e6];
export const scalar = fc.oneof(fc.constantFrom(...STRINGS), fc.constantFrom(...NUMBERS), fc.boolean());
export const orderedScalar = fc.oneof(fc.constantFrom(...STRINGS), fc.constantFrom(...NUMBERS));
const KEYS = ['plan', 'tier', 'tags', 'age', 'name', 'a', 'b', '0'];

const json: fc.Arbitrary<unknown> = fc.letrec<{ v: unknown }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    scalar,
    fc.constant(null),
    fc.array(tie('v'), { maxLength: 3 }),
    fc.dictionary(fc.constantFrom(...KEYS), tie('v'), { maxKeys: 3 }),
  ),
})).v;
// Mostly the shapes the PATHS below ask about, plus some arbitrary JSON on top.
export const object = fc
  .tuple(
    fc.record(
      {
        plan: fc.oneof(scalar, fc.record({ tier: scalar })),
        tags: fc.array(fc.oneof(scalar, fc.array(scalar, { maxLength: 2 })), { maxLength: 3 }),
        age: fc.constantFrom(...NUMBERS),
        name: fc.constantFrom(...STRINGS),
        a: fc.oneof(fc.record({ b: scalar }), fc.array(scalar, { maxLength: 2 })),
      },
      { requiredKeys: [] },
    ),
    fc.dictionary(fc.constantFrom(...KEYS), json, { maxKeys: 2 }),
  )
  .map(([known, extra]) => ({ ...extra, ...known }));
export const PATHS = [
  'plan',
  'plan.tier',
  'tags',
  'tags.0',
  'tags.1',
  'age',
  'name',
  'a.b',
  'a.0',
  '0',
  'missing',
];

export const at = (maxDays: number) =>
  fc.integer({ min: 0, max: maxDays * DAY }).map((ms) => new Date(NOW.getTime() - ms));
export const cents = (max: number) => fc.integer({ min: 0, max }).map((c) => c / 100);
const orNull = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: null });

/**
 * Event payloads add what the typed property rows (migration 0029) must get right: nested paths,
 * strings past 500 characters (stored cut to 501; a substring test past the cut reads the payload),
 * a key with a dot in it (no path reaches it) and, one event in ten, more values than the table
 * holds for one event (a marker row: its tests read the payload).
 */
const LONG = [`${'x'.repeat(600)}ann`, `pro${'x'.repeat(600)}`, 'a'.repeat(501)];
export const eventPayload = fc
  .tuple(
    object,
    fc.record(
      {
        cart: fc.record(
          {
            items: fc.array(
              fc.record({ sku: fc.constantFrom('pro', 'ann', '10'), qty: fc.constantFrom(1, 2) }),
              {
                maxLength: 2,
              },
            ),
            total: fc.constantFrom(...NUMBERS),
            paid: fc.boolean(),
          },
          { requiredKeys: [] },
        ),
        long: fc.oneof(fc.constantFrom(...LONG), fc.array(fc.constantFrom(...LONG, 'ann'), { maxLength: 2 })),
        'a.b': scalar,
      },
      { requiredKeys: [] },
    ),
    fc.integer({ min: 0, max: 9 }),
  )
  .map(([o, extra, roll]) => ({
    ...o,
    ...extra,
    ...(roll === 0 ? { big: Array.from({ length: 300 }, (_, i) => i) } : {}),
  }));
export const PROPERTY_PATHS = [
  ...PATHS,
  'cart',
  'cart.total',
  'cart.paid',
  'cart.items',
  'cart.items.0.sku',
  'cart.items.1.qty',
  'cart.items.1.sku',
  'tags.2.0',
  'long',
];

const event: fc.Arbitrary<EvalEvent> = fc.record({
  type: fc.constantFrom(...EVENT_TYPE_NAMES),
  name: fc.constantFrom('Product Viewed', 'Signed Up', 'Checkout'),
  payload: eventPayload,
  occurred_at: at(60),
});

const item = fc.record({
  product_id: orNull(fc.constantFrom('p1', 'p2', 'p3')),
  category: orNull(fc.constantFrom('shoes', 'hats')),
  name: fc.constant('thing'),
  price: cents(1000),
  quantity: fc.integer({ min: 1, max: 3 }),
});

const order: fc.Arbitrary<EvalOrder> = fc.record({
  status: fc.constantFrom(...ORDER_STATUS_NAMES),
  total: cents(20_000),
  currency: fc.constantFrom('EUR', 'USD'),
  items: fc.array(item, { maxLength: 3 }),
  occurred_at: at(60),
});

export const TEXTS = [
  'ann@example.com',
  'Ann@example.com',
  'bob@example.org',
  'Émile',
  'ann',
  '😀x',
  '\uFF5E',
  '',
];

export const profile: fc.Arbitrary<EvalProfile> = fc
  .record({
    id: fc.uuid({ version: 4 }),
    email: orNull(fc.constantFrom(...TEXTS)),
    first_name: orNull(fc.constantFrom(...TEXTS)),
    last_name: orNull(fc.constantFrom(...TEXTS)),
    rfm_segment: orNull(fc.constantFrom('champions', 'at_risk', 'lost')),
    predicted_clv: orNull(cents(50_000)),
    churn_risk_score: orNull(fc.constantFrom(0, 0.1, 0.25, 0.5, 0.9, 1)),
    created_at: at(100),
    updated_at: at(100),
    attributes: object,
    events: fc.array(event, { maxLength: 5 }),
    orders: fc.array(order, { maxLength: 3 }),
  })
  // As in the product: total_spend is the completed orders' sum (commerce keeps it so).
  .map((p) => ({ ...p, total_spend: completedSpend(p.orders) }));

export const profiles = fc.uniqueArray(profile, { minLength: 3, maxLength: 8, selector: (p) => p.id });
