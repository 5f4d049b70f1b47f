import fc from 'fast-check';
import type { EvalEvent, EvalOrder, EvalProfile } from './evaluate';
import { completedSpend, DAY, NOW } from './query.test-kit';
import {
  AGGREGATE_OPERATORS,
  EVENT_TYPE_NAMES,
  type FieldKind,
  OPERATORS,
  ORDER_STATUS_NAMES,
  PROFILE_FIELD_KINDS,
  type ProfileFieldName,
} from './types';

/**
 * Random profiles and random queries drawn from small pools, so that conditions often hit and
 * often miss. The pools hold the known traps: code point vs UTF-16 order ('😀' vs '\uFF5E'), case,
 * JSON null, numbers and strings that look alike ('10' vs 10), nested arrays, empty strings.
 */
const STRINGS = ['pro', 'Pro', 'free', '', 'ann', 'an', '10', '😀', '\uFF5E', 'shoes', 'a.b'];
const NUMBERS = [0, 1, 2.5, 10, -3, 100, 0.1, 1e6];
const scalar = fc.oneof(fc.constantFrom(...STRINGS), fc.constantFrom(...NUMBERS), fc.boolean());
const orderedScalar = fc.oneof(fc.constantFrom(...STRINGS), fc.constantFrom(...NUMBERS));
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
const object = fc
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
const PATHS = ['plan', 'plan.tier', 'tags', 'tags.0', 'tags.1', 'age', 'name', 'a.b', 'a.0', '0', 'missing'];

const at = (maxDays: number) =>
  fc.integer({ min: 0, max: maxDays * DAY }).map((ms) => new Date(NOW.getTime() - ms));
const cents = (max: number) => fc.integer({ min: 0, max }).map((c) => c / 100);
const orNull = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: null });

const event: fc.Arbitrary<EvalEvent> = fc.record({
  type: fc.constantFrom(...EVENT_TYPE_NAMES),
  name: fc.constantFrom('Product Viewed', 'Signed Up', 'Checkout'),
  payload: object,
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

const TEXTS = ['ann@example.com', 'Ann@example.com', 'bob@example.org', 'Émile', 'ann', '😀x', '\uFF5E', ''];

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

const sortedPair = <T>(a: fc.Arbitrary<T>, cmp: (x: T, y: T) => number) =>
  fc.tuple(a, a).map(([x, y]) => (cmp(x, y) <= 0 ? [x, y] : [y, x]));
const codePointCmp = (x: string, y: string) => {
  const a = Array.from(x).map((c) => c.codePointAt(0)!);
  const b = Array.from(y).map((c) => c.codePointAt(0)!);
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
};

/** A valid {op, value} for a value of this kind (attributes and properties are `json`). */
function test(kind: FieldKind | 'json'): fc.Arbitrary<{ op: string; value?: unknown }> {
  const ops = OPERATORS.filter((o) => {
    if (kind === 'money' || kind === 'number') return o !== 'contains' && o !== 'starts_with';
    if (kind === 'time') return !['contains', 'starts_with', 'in', 'not_in'].includes(o);
    return true;
  });
  const one: fc.Arbitrary<unknown> =
    kind === 'text'
      ? fc.constantFrom(...TEXTS, 'ann', 'Ann', '@', 'o')
      : kind === 'money'
        ? cents(50_000)
        : kind === 'number'
          ? fc.constantFrom(0, 0.1, 0.3, 0.5, 1)
          : kind === 'time'
            ? at(100).map((d) => d.toISOString())
            : scalar;
  const ordered = kind === 'json' ? orderedScalar : one;
  return fc.constantFrom(...ops).chain((op): fc.Arbitrary<{ op: string; value?: unknown }> => {
    if (op === 'exists' || op === 'not_exists') return fc.constant({ op });
    if (op === 'in' || op === 'not_in')
      return fc.array(one, { minLength: 1, maxLength: 3 }).map((value) => ({ op, value }));
    if (op === 'starts_with' || op === 'contains') {
      const v = op === 'starts_with' || kind === 'text' ? fc.constantFrom(...STRINGS, 'a', 'A', 'ann@') : one;
      return v.map((value) => ({ op, value }));
    }
    if (op === 'between') {
      const pair =
        kind === 'json'
          ? fc.oneof(
              sortedPair(fc.constantFrom(...NUMBERS), (x, y) => x - y),
              sortedPair(fc.constantFrom(...STRINGS), codePointCmp),
            )
          : kind === 'text'
            ? sortedPair(one as fc.Arbitrary<string>, codePointCmp)
            : kind === 'time'
              ? sortedPair(one as fc.Arbitrary<string>, (x, y) => Date.parse(x) - Date.parse(y))
              : sortedPair(one as fc.Arbitrary<number>, (x, y) => x - y);
      return pair.map((value) => ({ op, value }));
    }
    return (['gt', 'gte', 'lt', 'lte'].includes(op) ? ordered : one).map((value) => ({ op, value }));
  });
}

const field = fc
  .constantFrom(...(Object.keys(PROFILE_FIELD_KINDS) as ProfileFieldName[]))
  .chain((f) => test(PROFILE_FIELD_KINDS[f]).map((t) => ({ field: f, ...t })));
const attribute = fc.tuple(fc.constantFrom(...PATHS), test('json')).map(([a, t]) => ({ attribute: a, ...t }));
const property = fc.tuple(fc.constantFrom(...PATHS), test('json')).map(([p, t]) => ({ property: p, ...t }));

const aggregate = (value: fc.Arbitrary<number>) =>
  fc.oneof(
    fc.record({ op: fc.constantFrom(...AGGREGATE_OPERATORS.filter((o) => o !== 'between')), value }),
    fc.record({ op: fc.constant('between'), value: sortedPair(value, (x, y) => x - y) }),
  );
const window = fc.oneof(
  fc.constant({}),
  fc.record({ within_days: fc.constantFrom(1, 7, 30) }),
  fc.record({ from: at(40).map((d) => d.toISOString()) }, { requiredKeys: [] }),
  fc.record({ to: at(20).map((d) => d.toISOString()) }, { requiredKeys: [] }),
  fc
    .tuple(at(40), at(40))
    .filter(([x, y]) => x.getTime() !== y.getTime())
    .map(([x, y]) => (x < y ? [x, y] : [y, x]))
    .map(([from, to]) => ({ from: from!.toISOString(), to: to!.toISOString() })),
);

const eventCond = fc.record(
  {
    event: fc
      .tuple(
        fc.record(
          {
            type: fc.constantFrom(...EVENT_TYPE_NAMES),
            name: fc.constantFrom('Product Viewed', 'Signed Up', 'Nope'),
            where: fc.array(property, { maxLength: 2 }),
          },
          { requiredKeys: [] },
        ),
        window,
      )
      .map(([f, w]) => ({ ...f, ...w })),
    count: aggregate(fc.integer({ min: 0, max: 4 })),
  },
  { requiredKeys: ['event'] },
);

const orderCond = fc
  .tuple(
    fc.record(
      {
        status: fc.oneof(
          fc.constantFrom(...ORDER_STATUS_NAMES),
          fc.uniqueArray(fc.constantFrom(...ORDER_STATUS_NAMES), { minLength: 1 }),
        ),
        product_id: fc.constantFrom('p1', 'p2'),
        category: fc.constantFrom('shoes', 'hats'),
        currency: fc.constantFrom('EUR', 'USD'),
      },
      { requiredKeys: [] },
    ),
    window,
    fc.oneof(
      fc.constant({}),
      fc.record({ count: aggregate(fc.integer({ min: 0, max: 3 })) }),
      fc.record({ sum: aggregate(cents(30_000)) }),
    ),
  )
  .map(([f, w, agg]) => ({ order: { ...f, ...w }, ...agg }));

/** Random queries up to a few levels deep; `refs` are ids that may be referenced. */
export function query(refs: readonly string[] = []): fc.Arbitrary<unknown> {
  const leaves: fc.Arbitrary<unknown>[] = [field, attribute, eventCond, orderCond];
  if (refs.length > 0) leaves.push(fc.constantFrom(...refs).map((segment) => ({ segment })));
  return fc.letrec<{ q: unknown }>((tie) => ({
    q: fc.oneof(
      { maxDepth: 3, depthSize: 'small' },
      // Mostly leaves: a wide tree of random conditions is nearly always all-true or all-false.
      { arbitrary: fc.oneof(...leaves), weight: 5 },
      { arbitrary: fc.array(tie('q'), { minLength: 1, maxLength: 3 }).map((and) => ({ and })), weight: 1 },
      { arbitrary: fc.array(tie('q'), { minLength: 1, maxLength: 3 }).map((or) => ({ or })), weight: 1 },
      { arbitrary: tie('q').map((not) => ({ not })), weight: 1 },
    ),
  })).q;
}
