import { describe, expect, it } from 'vitest';
import { parseSegmentQuery } from './parse';
import { SEGMENT_LIMITS } from './types';

/** The error list of an invalid query, as [path, message] pairs. */
function errorsOf(input: unknown): [string, string][] {
  const r = parseSegmentQuery(input);
  if (r.ok) throw new Error('expected the query to be refused');
  return r.errors.map((e) => [e.path, e.message]);
}
const pathsOf = (input: unknown) => errorsOf(input).map(([p]) => p);
const leaf = { field: 'total_spend', op: 'gte', value: 1 };

describe('parseSegmentQuery accepts', () => {
  it('every kind of condition, returning a detached copy of the query', () => {
    const input = {
      and: [
        { field: 'email', op: 'starts_with', value: 'ann' },
        { attribute: 'plan.tier', op: 'in', value: ['pro', 'team'] },
        { attribute: 'tags', op: 'exists' },
        {
          event: { type: 'track', name: 'Viewed', within_days: 30 },
          count: { op: 'between', value: [1, 5] },
        },
        { order: { status: ['completed', 'refunded'], from: '2025-01-01' }, sum: { op: 'gt', value: 9.99 } },
        { not: { segment: 'seg_1' } },
      ],
    };
    const r = parseSegmentQuery(input);
    expect(r).toEqual({ ok: true, query: input });
    if (r.ok) expect(r.query).not.toBe(input);
  });
});

describe('parseSegmentQuery refuses, naming the faulty node by JSON pointer,', () => {
  it('a node that is not an object, or has no kind, or two kinds', () => {
    expect(pathsOf(null)).toEqual(['']);
    expect(pathsOf({ or: [leaf, 3] })).toEqual(['/or/1']);
    expect(errorsOf({ and: [{ op: 'eq' }] })[0]).toEqual([
      '/and/0',
      'must have exactly one of and, or, not, field, attribute, event, order, segment (found none)',
    ]);
    expect(errorsOf({ field: 'email', attribute: 'x', op: 'exists' })[0]![1]).toMatch(
      /found field and attribute/,
    );
  });

  it('empty and/or lists and unknown keys (escaped as JSON pointer tokens)', () => {
    expect(pathsOf({ and: [] })).toEqual(['/and']);
    expect(pathsOf({ or: [{ ...leaf, 'a/b~': 1 }] })).toEqual(['/or/0/a~1b~0']);
    expect(pathsOf({ event: { kind: 'x' } })).toEqual(['/event/kind']);
  });

  it('unknown fields, operators that do not apply, and values of the wrong type', () => {
    expect(pathsOf({ field: 'password', op: 'eq', value: 'x' })).toEqual(['/field']);
    expect(pathsOf({ field: 'total_spend', op: 'like', value: 1 })).toEqual(['/op']);
    expect(errorsOf({ field: 'total_spend', op: 'contains', value: 1 })).toEqual([
      ['/op', 'contains does not apply to a money value'],
    ]);
    expect(pathsOf({ field: 'created_at', op: 'in', value: ['2025-01-01'] })).toEqual(['/op']);
    expect(pathsOf({ and: [leaf, { field: 'email', op: 'eq', value: 3 }] })).toEqual(['/and/1/value']);
    expect(pathsOf({ attribute: 'age', op: 'gt', value: true })).toEqual(['/value']);
    expect(pathsOf({ attribute: 'tags', op: 'in', value: ['a', {}, 'b', null] })).toEqual([
      '/value/1',
      '/value/3',
    ]);
    expect(pathsOf({ attribute: 'a', op: 'eq' })).toEqual(['']);
    expect(pathsOf({ attribute: 'a', op: 'exists', value: 1 })).toEqual(['/value']);
    expect(pathsOf({ attribute: 'a', op: 'eq', value: [1] })).toEqual(['/value']);
  });

  it('money with more than 2 decimals, and bad or ambiguous dates', () => {
    expect(pathsOf({ field: 'total_spend', op: 'gt', value: 10.005 })).toEqual(['/value']);
    expect(pathsOf({ field: 'created_at', op: 'gt', value: '2024-02-30' })).toEqual(['/value']);
    expect(pathsOf({ field: 'created_at', op: 'gt', value: '2024-02-01T10:00:00' })).toEqual(['/value']);
    expect(pathsOf({ field: 'created_at', op: 'gt', value: 'yesterday' })).toEqual(['/value']);
  });

  it('between pairs that are malformed, mixed or reversed', () => {
    expect(pathsOf({ attribute: 'a', op: 'between', value: [1] })).toEqual(['/value']);
    expect(pathsOf({ attribute: 'a', op: 'between', value: [1, 'b'] })).toEqual(['/value']);
    expect(pathsOf({ attribute: 'a', op: 'between', value: [5, 1] })).toEqual(['/value']);
    expect(pathsOf({ field: 'created_at', op: 'between', value: ['2025-02-01', '2025-01-01'] })).toEqual([
      '/value',
    ]);
    expect(pathsOf({ event: {}, count: { op: 'between', value: [3, 1] } })).toEqual(['/count/value']);
  });

  it('attribute paths with empty segments, or index segments PostgreSQL would read differently', () => {
    for (const bad of ['', 'a..b', '.a', 'tags.-1', 'tags.01', 'tags. 1', 'tags.+1']) {
      expect(pathsOf({ attribute: bad, op: 'exists' }), bad).toEqual(['/attribute']);
    }
    expect(pathsOf({ event: { where: [{ property: 'x.', op: 'exists' }] } })).toEqual([
      '/event/where/0/property',
    ]);
  });

  it('bad event and order filters', () => {
    expect(pathsOf({ event: { type: 'click' } })).toEqual(['/event/type']);
    expect(pathsOf({ event: { name: '' } })).toEqual(['/event/name']);
    expect(pathsOf({ event: { within_days: 0 } })).toEqual(['/event/within_days']);
    expect(pathsOf({ event: { within_days: 7, from: '2025-01-01' } })).toEqual(['/event/within_days']);
    expect(pathsOf({ event: { from: '2025-02-01', to: '2025-01-01' } })).toEqual(['/event/to']);
    expect(pathsOf({ event: {}, count: { op: 'exists' } })).toEqual(['/count/op']);
    expect(pathsOf({ event: {}, count: { op: 'gte', value: 1.5 } })).toEqual(['/count/value']);
    expect(pathsOf({ order: { status: 'shipped' } })).toEqual(['/order/status']);
    expect(pathsOf({ order: { status: [] } })).toEqual(['/order/status']);
    expect(pathsOf({ order: { currency: 'eur' } })).toEqual(['/order/currency']);
    expect(pathsOf({ order: {}, count: { op: 'gt', value: 1 }, sum: { op: 'gt', value: 1 } })).toEqual([
      '/sum',
    ]);
    expect(pathsOf({ segment: '' })).toEqual(['/segment']);
  });

  it('strings that PostgreSQL cannot store, and strings over the length limit', () => {
    expect(pathsOf({ field: 'email', op: 'eq', value: 'a\u0000b' })).toEqual(['/value']);
    expect(pathsOf({ field: 'email', op: 'eq', value: 'a\uD800' })).toEqual(['/value']);
    expect(pathsOf({ field: 'email', op: 'eq', value: 'x'.repeat(SEGMENT_LIMITS.string + 1) })).toEqual([
      '/value',
    ]);
  });

  it('several problems at once, each at its own path', () => {
    expect(
      pathsOf({
        and: [
          { field: 'email', op: 'eq', value: 1 },
          { not: { attribute: 'a', op: 'nope' } },
          { segment: 7 },
        ],
      }),
    ).toEqual(['/and/0/value', '/and/1/not/op', '/and/2/segment']);
  });
});

describe('the limits', () => {
  const nest = (levels: number): unknown => (levels === 1 ? leaf : { not: nest(levels - 1) });

  it(`allow ${SEGMENT_LIMITS.depth} levels of nesting and refuse the node one deeper`, () => {
    expect(parseSegmentQuery(nest(SEGMENT_LIMITS.depth)).ok).toBe(true);
    expect(errorsOf(nest(SEGMENT_LIMITS.depth + 1))).toEqual([
      [`${'/not'.repeat(SEGMENT_LIMITS.depth)}`, 'nests deeper than 10 levels'],
    ]);
  });

  it(`allow ${SEGMENT_LIMITS.conditions} conditions and refuse the first one beyond (where items count too)`, () => {
    expect(parseSegmentQuery({ or: Array(SEGMENT_LIMITS.conditions).fill(leaf) }).ok).toBe(true);
    expect(errorsOf({ or: Array(SEGMENT_LIMITS.conditions + 1).fill(leaf) })).toEqual([
      ['/or/100', 'more than 100 conditions'],
    ]);
    const where = Array(2).fill({ property: 'k', op: 'exists' });
    expect(pathsOf({ or: [...Array(98).fill(leaf), { event: { where } }] })).toEqual([
      '/or/98/event/where/1',
    ]);
  });

  it('bound in-lists, where lists, path length, numbers, counts and within_days', () => {
    const L = SEGMENT_LIMITS;
    expect(pathsOf({ attribute: 'a', op: 'in', value: Array(L.list + 1).fill(1) })).toEqual(['/value']);
    expect(pathsOf({ event: { where: Array(L.where + 1).fill({ property: 'k', op: 'exists' }) } })).toEqual([
      '/event/where',
    ]);
    expect(
      pathsOf({
        attribute: Array(L.pathSegments + 1)
          .fill('a')
          .join('.'),
        op: 'exists',
      }),
    ).toEqual(['/attribute']);
    expect(pathsOf({ attribute: 'a', op: 'gt', value: L.number * 10 })).toEqual(['/value']);
    expect(pathsOf({ event: {}, count: { op: 'gt', value: L.count + 1 } })).toEqual(['/count/value']);
    expect(pathsOf({ order: { within_days: L.withinDaysMax + 1 } })).toEqual(['/order/within_days']);
  });

  it(`report at most ${SEGMENT_LIMITS.errors} errors`, () => {
    const bad = { field: 'nope', op: 'eq', value: 1 };
    expect(errorsOf({ or: Array(80).fill(bad) })).toHaveLength(SEGMENT_LIMITS.errors);
  });
});
