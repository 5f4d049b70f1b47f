import { describe, expect, it } from 'vitest';
import { compileSegment } from './compile';
import { parseSegmentQuery } from './parse';
import type { SegmentQuery } from './types';

const NOW = new Date('2026-01-31T00:00:00.000Z');

function q(input: unknown): SegmentQuery {
  const r = parseSegmentQuery(input);
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.query;
}

/** Per profile (the default strategy): an expression over `p` alone, with no joins. */
const compile = (input: unknown, segments = new Map<string, SegmentQuery>(), firstParam = 2) => {
  const { sql, params, joins } = compileSegment(q(input), { now: NOW, segments, firstParam });
  expect(joins).toBe('');
  return { sql, params };
};
const compileSet = (input: unknown) =>
  compileSegment(q(input), { now: NOW, segments: new Map(), firstParam: 2, strategy: 'set' });

describe('compileSegment', () => {
  it('compiles a profile field test to a NULL-safe comparison with the value as a parameter', () => {
    expect(compile({ field: 'total_spend', op: 'gte', value: 100 })).toEqual({
      sql: 'COALESCE(p.total_spend >= $2::numeric, false)',
      params: ['100'],
    });
  });

  it('compares text in code point order and times as instants normalized to UTC', () => {
    expect(
      compile({
        and: [
          { field: 'last_name', op: 'between', value: ['A', 'M'] },
          { field: 'created_at', op: 'lt', value: '2025-06-01T12:00:00+02:00' },
        ],
      }),
    ).toEqual({
      sql:
        '(COALESCE(p.last_name COLLATE "C" BETWEEN $2::text AND $3::text, false) AND ' +
        'COALESCE(p.created_at < $4::timestamptz, false))',
      params: ['A', 'M', '2025-06-01T10:00:00.000Z'],
    });
  });

  it('passes an attribute path as a text[] parameter and compares JSON values by type', () => {
    expect(compile({ attribute: 'plan.tier', op: 'eq', value: 'pro' }, undefined, 5)).toEqual({
      sql: 'COALESCE((p.attributes #> $5::text[]) = $6::jsonb, false)',
      params: [['plan', 'tier'], '"pro"'],
    });
    expect(compile({ attribute: 'age', op: 'gt', value: 30 }).sql).toBe(
      "CASE WHEN jsonb_typeof((p.attributes #> $2::text[])) = 'number' " +
        'THEN (p.attributes #> $2::text[])::numeric > $3::numeric ELSE false END',
    );
  });

  it('makes contains match an array element or a substring, never by LIKE', () => {
    const a = '(p.attributes #> $2::text[])';
    expect(compile({ attribute: 'tags', op: 'contains', value: 'vip' })).toEqual({
      sql:
        `CASE jsonb_typeof(${a}) WHEN 'array' THEN ${a} @> $3::jsonb ` +
        `WHEN 'string' THEN strpos((${a} #>> '{}'), $4::text) > 0 ELSE false END`,
      params: [['tags'], '["vip"]', 'vip'],
    });
  });

  it('treats neq and not_in as "present and different"', () => {
    const a = '(p.attributes #> $2::text[])';
    expect(compile({ attribute: 'plan', op: 'neq', value: 'free' }).sql).toBe(
      `(COALESCE(jsonb_typeof(${a}), 'null') <> 'null' AND ${a} <> $3::jsonb)`,
    );
  });

  it('compiles an event condition per profile: the profile its only index condition, each payload test a probe of one event', () => {
    expect(
      compile({
        event: {
          type: 'track',
          name: 'Product Viewed',
          within_days: 30,
          where: [{ property: 'price', op: 'gt', value: 10 }],
        },
        count: { op: 'gte', value: 3 },
      }),
    ).toEqual({
      sql:
        // The profile's events (event_profiles_profile_idx, migration 0026): the name is a test no
        // index can take, so no index led by the name can serve one profile's count; the test of
        // the count inside the sub-query, computed once.
        '(SELECT count(*) >= $9::int8 FROM event_profiles e ' +
        'WHERE e.workspace_id = p.workspace_id AND e.profile_id = p.id AND e.event_type = $2::text ' +
        'AND (e.event_name = $3::text) IS TRUE AND e.occurred_at >= $4::timestamptz ' +
        // Each event's property rows by its seq alone (migration 0029), fenced into a sub-plan per
        // event; the payload only for an event too big for the table (its marker, kind x).
        'AND EXISTS (SELECT 1 FROM event_properties w WHERE w.seq = e.seq AND (w.path = ANY($5::text[])) IS TRUE ' +
        "AND ((w.kind <> 'x' AND (w.num > $6::numeric)) OR (w.kind = 'x' AND CASE WHEN " +
        "jsonb_typeof(event_payload_at(w.seq, $7::text[])) = 'number' THEN " +
        'event_payload_at(w.seq, $7::text[])::numeric > $8::numeric ELSE false END)) OFFSET 0))',
      params: [
        'track',
        'Product Viewed',
        '2026-01-01T00:00:00.000Z',
        ['price', ''],
        '10',
        ['price'],
        '10',
        '3',
      ],
    });
  });

  it('writes a count with a property test as one grouped pass over that property’s rows, left-joined, with the set strategy', () => {
    const { sql, params, joins } = compileSet({
      event: {
        name: 'Added to Cart',
        within_days: 30,
        where: [{ property: 'price', op: 'gt', value: 10 }],
      },
      count: { op: 'gte', value: 2 },
    });
    expect(sql).toBe('(g1.profile_id IS NOT NULL)');
    expect(joins).toMatch(
      /^LEFT JOIN \(SELECT w0\.workspace_id, w0\.profile_id FROM event_properties w0 WHERE w0\.event_name = \$2::text AND w0\.path = ANY\(\$3::text\[\]\) AND w0\.occurred_at >= \$4::timestamptz /,
    );
    expect(joins).toMatch(
      /GROUP BY 1, 2 HAVING count\(\*\) >= \$8::int8\) g1 ON g1\.workspace_id = p\.workspace_id AND g1\.profile_id = p\.id$/,
    );
    expect(params.slice(0, 2)).toEqual(['Added to Cart', ['price', '']]);
  });

  it('writes every event count as one grouped pass over the window with the set strategy, each its own join', () => {
    const grouped = (having: string, g = 'g1', name = '$2', bound = '$3') =>
      `LEFT JOIN (SELECT e.workspace_id, e.profile_id FROM event_profiles e WHERE e.event_name = ${name}::text ` +
      `GROUP BY 1, 2 HAVING ${having.replace('$b', bound)}) ${g} ON ${g}.workspace_id = p.workspace_id AND ${g}.profile_id = p.id`;
    const set = (count: unknown) => compileSet({ event: { name: 'Viewed' }, count });
    expect(set({ op: 'gte', value: 3 })).toMatchObject({
      sql: '(g1.profile_id IS NOT NULL)',
      joins: grouped('count(*) >= $b::int8'),
    });
    // An empty history passes "fewer than 3": the grouped pass lists those who fail it.
    expect(set({ op: 'lt', value: 3 })).toMatchObject({
      sql: '(g1.profile_id IS NULL)',
      joins: grouped('NOT (count(*) < $b::int8)'),
    });
    // "At least once" and "never" too; under `or` and `not` as well, each pass a join of its own.
    const either = compileSet({
      or: [
        { event: { name: 'Viewed' } },
        { not: { event: { name: 'Bought' }, count: { op: 'eq', value: 0 } } },
      ],
    });
    expect(either.sql).toBe('((g1.profile_id IS NOT NULL) OR (NOT (g2.profile_id IS NULL)))');
    expect(either.joins).toBe(
      `${grouped('count(*) >= $b::int8')} ${grouped('NOT (count(*) = $b::int8)', 'g2', '$4', '$5')}`,
    );
  });

  it('uses EXISTS for "occurred" and NOT EXISTS for "did not occur", each a sub-plan per profile', () => {
    const body = 'FROM event_profiles e WHERE e.workspace_id = p.workspace_id AND e.profile_id = p.id';
    expect(compile({ event: { type: 'page' } }).sql).toBe(
      `EXISTS (SELECT 1 ${body} AND e.event_type = $2::text OFFSET 0)`,
    );
    expect(compile({ event: {}, count: { op: 'eq', value: 0 } }).sql).toBe(
      `(NOT EXISTS (SELECT 1 ${body} OFFSET 0))`,
    );
  });

  it('sums completed order totals by default and matches products by item containment', () => {
    expect(
      compile({
        order: { product_id: 'sku-1', from: '2025-01-01', to: '2026-01-01' },
        sum: { op: 'between', value: [10, 99.5] },
      }),
    ).toEqual({
      // The profile its only index condition (the window a filter: orders_list_idx leads with the
      // time), the test inside the sub-query so the sum is computed once.
      sql:
        '(SELECT COALESCE(sum(o.total), 0) BETWEEN $6::numeric AND $7::numeric FROM orders o ' +
        'WHERE o.workspace_id = p.workspace_id AND o.profile_id = p.id AND o.status = ANY($2::text[]) ' +
        'AND (o.occurred_at >= $3::timestamptz) IS TRUE AND (o.occurred_at < $4::timestamptz) IS TRUE ' +
        'AND o.items @> $5::jsonb)',
      params: [
        ['completed'],
        '2025-01-01T00:00:00.000Z',
        '2026-01-01T00:00:00.000Z',
        '[{"product_id":"sku-1"}]',
        '10',
        '99.5',
      ],
    });
  });

  it('answers completed orders in a window from the profile row, probing only a profile whose orders straddle an edge', () => {
    expect(compile({ order: { within_days: 365 }, sum: { op: 'gte', value: 200 } })).toEqual({
      sql:
        '(CASE WHEN p.completed_orders = 0 OR p.completed_last_at < $3::timestamptz THEN false ' +
        'WHEN p.completed_first_at >= $3::timestamptz THEN p.total_spend >= $2::numeric ' +
        'ELSE (SELECT COALESCE(sum(o.total), 0) >= $2::numeric FROM orders o ' +
        "WHERE o.workspace_id = p.workspace_id AND o.profile_id = p.id AND o.status = 'completed' " +
        'AND (o.occurred_at >= $3::timestamptz) IS TRUE) END)',
      params: ['200', '2025-01-31T00:00:00.000Z'],
    });
    // A count that an empty history passes ("fewer than 2 orders"), with both edges of the window.
    expect(
      compile({ order: { from: '2025-06-01', to: '2026-01-01' }, count: { op: 'lt', value: 2 } }).sql,
    ).toBe(
      '(CASE WHEN p.completed_orders = 0 OR p.completed_last_at < $3::timestamptz ' +
        'OR p.completed_first_at >= $4::timestamptz THEN true ' +
        'WHEN p.completed_first_at >= $3::timestamptz AND p.completed_last_at < $4::timestamptz ' +
        'THEN p.completed_orders < $2::int8 ' +
        'ELSE (SELECT count(*) < $2::int8 FROM orders o ' +
        "WHERE o.workspace_id = p.workspace_id AND o.profile_id = p.id AND o.status = 'completed' " +
        'AND (o.occurred_at >= $3::timestamptz) IS TRUE AND (o.occurred_at < $4::timestamptz) IS TRUE) END)',
    );
    // No window: the row answers alone. A status other than completed, or a currency, is probed.
    expect(compile({ order: {}, count: { op: 'gte', value: 3 } }).sql).toBe(
      '(p.completed_orders >= $2::int8)',
    );
    expect(compile({ order: { currency: 'EUR' } }).sql).toMatch(/^EXISTS \(SELECT 1 FROM orders o/);
    expect(compile({ order: { status: 'refunded' } }).sql).toMatch(/^EXISTS \(SELECT 1 FROM orders o/);
  });

  it('inlines a referenced segment, so its SQL is exact rather than a stored membership', () => {
    const segments = new Map([['seg_vip', q({ field: 'rfm_segment', op: 'eq', value: 'champions' })]]);
    expect(compile({ not: { segment: 'seg_vip' } }, segments)).toEqual({
      sql: '(NOT COALESCE(p.rfm_segment = $2::text, false))',
      params: ['champions'],
    });
  });

  it('never splices a value into the SQL text', () => {
    const evil = "x'); DROP TABLE profiles; --";
    const { sql, params } = compile({
      or: [
        { field: 'email', op: 'contains', value: evil },
        { attribute: 'a', op: 'in', value: [evil] },
        { event: { name: evil, where: [{ property: 'k', op: 'starts_with', value: evil }] } },
        { order: { category: evil } },
      ],
    });
    expect(sql).not.toContain('DROP');
    expect(JSON.stringify(params)).toContain('DROP');
  });

  it('throws a clear error for an unknown or cyclic reference', () => {
    expect(() => compile({ segment: 'seg_missing' })).toThrow(/unknown segment seg_missing/);
    const loop = new Map([
      ['seg_a', q({ segment: 'seg_b' })],
      ['seg_b', q({ segment: 'seg_a' })],
    ]);
    expect(() => compile({ segment: 'seg_a' }, loop)).toThrow(/cycle: seg_a → seg_b → seg_a/);
  });
});
