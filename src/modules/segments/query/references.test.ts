import { describe, expect, it } from 'vitest';
import { EVENT_TYPES, ORDER_STATUSES } from '../../ingest';
import { parseSegmentQuery } from './parse';
import { expandSegments, findSegmentCycle, isSegmentExpandError, segmentReferences } from './references';
import { EVENT_TYPE_NAMES, ORDER_STATUS_NAMES, SEGMENT_LIMITS, type SegmentQuery } from './types';

function q(input: unknown): SegmentQuery {
  const r = parseSegmentQuery(input);
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.query;
}
const deps = (o: Record<string, string[]>) => new Map(Object.entries(o));

describe('segmentReferences', () => {
  it('lists each directly referenced id once, in order, at any depth', () => {
    const query = q({
      or: [{ segment: 'b' }, { not: { and: [{ segment: 'a' }, { segment: 'b' }] } }, { event: {} }],
    });
    expect(segmentReferences(query)).toEqual(['b', 'a']);
  });
});

describe('findSegmentCycle', () => {
  it('finds none in a chain or a diamond', () => {
    expect(findSegmentCycle('a', deps({ a: ['b', 'c'], b: ['d'], c: ['d'], d: [] }))).toBeNull();
    expect(findSegmentCycle('a', deps({}))).toBeNull();
  });

  it('returns the path around a cycle through the root', () => {
    expect(findSegmentCycle('a', deps({ a: ['b'], b: ['c'], c: ['a'] }))).toEqual(['a', 'b', 'c', 'a']);
  });

  it('finds a self reference', () => {
    expect(findSegmentCycle('a', deps({ a: ['a'] }))).toEqual(['a', 'a']);
  });

  it('finds a cycle further down that the root only leads into', () => {
    expect(findSegmentCycle('a', deps({ a: ['x', 'b'], b: ['c'], c: ['b'] }))).toEqual(['b', 'c', 'b']);
  });

  it('ignores cycles the root cannot reach', () => {
    expect(findSegmentCycle('a', deps({ a: ['b'], c: ['d'], d: ['c'] }))).toBeNull();
  });
});

describe('expandSegments', () => {
  it('replaces references by the referenced queries, transitively', () => {
    const segments = new Map([
      ['a', q({ segment: 'b' })],
      ['b', q({ field: 'email', op: 'exists' })],
    ]);
    expect(expandSegments(q({ not: { segment: 'a' } }), segments)).toEqual({
      not: { field: 'email', op: 'exists' },
    });
  });

  it('refuses unknown ids and cycles with a typed error', () => {
    const unknown = (() => {
      try {
        expandSegments(q({ segment: 'nope' }), new Map());
      } catch (e) {
        return e;
      }
    })();
    expect(isSegmentExpandError(unknown) && unknown.code).toBe('unknown_segment');
    expect(isSegmentExpandError(unknown) && unknown.segments).toEqual(['nope']);
    const cyc = new Map([['a', q({ and: [{ segment: 'a' }] })]]);
    expect(() => expandSegments(q({ segment: 'a' }), cyc)).toThrow(/cycle: a → a/);
  });

  it(`stops a diamond of references before it grows past ${SEGMENT_LIMITS.expandedConditions} conditions`, () => {
    // Each level doubles the tree: 2^20 leaves if nothing stopped it.
    const segments = new Map<string, SegmentQuery>([['s0', q({ field: 'email', op: 'exists' })]]);
    for (let i = 1; i <= 20; i++)
      segments.set(`s${i}`, q({ or: [{ segment: `s${i - 1}` }, { segment: `s${i - 1}` }] }));
    expect(() => expandSegments(q({ segment: 's20' }), segments)).toThrow(/more than 1000 conditions/);
  });
});

describe('the lists this pure core keeps of other modules', () => {
  it('match the ingest event types and the order statuses', () => {
    expect([...EVENT_TYPE_NAMES]).toEqual([...EVENT_TYPES]);
    expect([...ORDER_STATUS_NAMES]).toEqual([...ORDER_STATUSES]);
  });
});
