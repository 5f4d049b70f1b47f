import fc from 'fast-check';
import {
  at,
  cents,
  NUMBERS,
  orderedScalar,
  PATHS,
  PROPERTY_PATHS,
  STRINGS,
  scalar,
  TEXTS,
} from './profile-arbitraries.test-kit';
import {
  AGGREGATE_OPERATORS,
  EVENT_TYPE_NAMES,
  type FieldKind,
  OPERATORS,
  ORDER_STATUS_NAMES,
  PROFILE_FIELD_KINDS,
  type ProfileFieldName,
} from './types';

// Random queries over the profiles' pools (profile-arbitraries.test-kit.ts), so that their
// conditions often hit and often miss.
export { profile, profiles } from './profile-arbitraries.test-kit';

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
const property = fc
  .tuple(fc.constantFrom(...PROPERTY_PATHS), test('json'))
  .map(([p, t]) => ({ property: p, ...t }));

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

/**
 * Event conditions that always test properties (1–3 `where` tests, any operator and path): the
 * typed property rows of migration 0029 against the evaluator, more often than random trees do.
 */
export const propertyQuery: fc.Arbitrary<unknown> = fc
  .tuple(
    fc.record(
      {
        type: fc.constantFrom(...EVENT_TYPE_NAMES),
        name: fc.constantFrom('Product Viewed', 'Signed Up'),
      },
      { requiredKeys: [] },
    ),
    window,
    fc.array(property, { minLength: 1, maxLength: 3 }),
    fc.option(aggregate(fc.integer({ min: 0, max: 3 })), { nil: undefined }),
  )
  .map(([f, w, where, count]) => ({ event: { ...f, ...w, where }, ...(count ? { count } : {}) }));

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
