import { describe, expect, it } from 'vitest';
import { arityOf, blank, countConditions, OPS, replaceNode, reshapeValues } from './form';
import { fromQuery, toQuery } from './query';

const valueFor = (op: (typeof OPS)[number]) =>
  arityOf(op) === 'none'
    ? {}
    : arityOf(op) === 'two'
      ? { value: [1, 5] }
      : arityOf(op) === 'list'
        ? { value: ['a', 2, true] }
        : { value: 'x' };

const queries: Record<string, unknown> = {
  'a field test': { field: 'total_spend', op: 'gte', value: 100 },
  'a time range': {
    and: [
      { field: 'created_at', op: 'gte', value: '2025-01-01' },
      { field: 'churn_risk_score', op: 'between', value: [0.5, 1] },
    ],
  },
  'neq or missing': {
    or: [
      { attribute: 'plan.tier', op: 'neq', value: 'pro' },
      { attribute: 'plan.tier', op: 'not_exists' },
    ],
  },
  'a boolean attribute': { attribute: 'newsletter', op: 'eq', value: false },
  'a mixed list': { attribute: 'company.size', op: 'in', value: [50, 100, 'enterprise'] },
  'an event with where and count': {
    event: {
      type: 'track',
      name: 'Product Viewed',
      within_days: 30,
      where: [{ property: 'price', op: 'gt', value: 10 }],
    },
    count: { op: 'gte', value: 3 },
  },
  'an event in a range, never': {
    event: { name: 'Checkout Completed', from: '2025-01-01', to: '2025-07-01' },
    count: { op: 'eq', value: 0 },
  },
  'any event': { event: {} },
  'an event from a date only': { event: { type: 'page', from: '2025-01-01' } },
  'a count between': { event: { name: 'x' }, count: { op: 'between', value: [2, 4] } },
  'orders summed in a currency': {
    order: { within_days: 90, currency: 'EUR' },
    sum: { op: 'gte', value: 100 },
  },
  'orders with a status list': {
    order: { category: 'brewing', status: ['completed', 'refunded'] },
    count: { op: 'gte', value: 2 },
  },
  'orders with one status and a product': { order: { status: 'refunded', product_id: 'p1' } },
  'a one-element status list stays a list': { order: { status: ['pending'] } },
  'a nested segment under not': {
    and: [{ segment: 'seg_vip' }, { not: { field: 'churn_risk_score', op: 'gt', value: 0.7 } }],
  },
  'not of not': { not: { not: { segment: 'seg_a' } } },
  'deep nesting': { or: [{ and: [{ or: [{ attribute: 'tags', op: 'contains', value: 'vip' }] }] }] },
};

describe('the segment builder keeps a query exactly as written', () => {
  it.each(Object.entries(queries))('round-trips %s', (_name, q) => {
    expect(toQuery(fromQuery(q))).toEqual(q);
  });

  it.each(OPS.map((op) => [op]))(
    'round-trips the %s operator on fields, attributes and event properties',
    (op) => {
      const field = { field: 'email', op, ...valueFor(op) };
      const attribute = { attribute: 'a.b.0', op, ...valueFor(op) };
      const event = { event: { where: [{ property: 'p', op, ...valueFor(op) }] } };
      for (const q of [field, attribute, event]) expect(toQuery(fromQuery(q))).toEqual(q);
    },
  );

  it('keeps a shape it does not know as raw JSON instead of dropping it', () => {
    const odd = { and: [{ field: 'email', op: 'eq', value: 'a', colour: 'red' }, { mystery: 1 }] };
    const node = fromQuery(odd);
    expect(node.kind).toBe('group');
    expect(node.kind === 'group' && node.children.map((c) => c.kind)).toEqual(['raw', 'raw']);
    expect(toQuery(node)).toEqual(odd);
  });

  it('builds new conditions that are valid queries', () => {
    expect(toQuery(blank('field'))).toEqual({ field: 'total_spend', op: 'gte', value: 100 });
    expect(toQuery(blank('event'))).toEqual({ event: { type: 'track' } });
    expect(toQuery(blank('order'))).toEqual({ order: {} });
  });

  it('reshapes values when the operator changes', () => {
    const one = [{ t: 'number' as const, v: '3' }];
    expect(reshapeValues('between', one)).toEqual([one[0], { t: 'number', v: '' }]);
    expect(reshapeValues('exists', one)).toEqual([]);
    expect(reshapeValues('in', one)).toEqual(one);
  });

  it('removes a node anywhere in the tree and counts conditions as the API does', () => {
    const root = fromQuery(queries['a nested segment under not']);
    expect(countConditions(root)).toBe(2);
    const inner = root.kind === 'group' ? root.children[0] : null;
    const pruned = replaceNode(root, inner?.id ?? '', null);
    expect(pruned && toQuery(pruned)).toEqual({
      and: [{ not: { field: 'churn_risk_score', op: 'gt', value: 0.7 } }],
    });
    expect(countConditions(fromQuery(queries['an event with where and count']))).toBe(2);
  });
});
