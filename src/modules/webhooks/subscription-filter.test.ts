import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EVENT_KINDS } from './policy';
import { subscriptionWants } from './subscription-filter';

const SEGMENT_KINDS = ['segment.entered', 'segment.exited'];
const kind = fc.constantFrom(...EVENT_KINDS);
const segmentId = fc.constantFrom('seg_a', 'seg_b', 'seg_c', 'seg_d');
const sub = fc.record({
  events: fc.uniqueArray(kind, { minLength: 1 }),
  segments: fc.uniqueArray(segmentId, { maxLength: 3 }),
});
const fact = fc.record({
  type: kind,
  data: fc.record({ segment_id: segmentId, profile_id: fc.uuid() }),
});

describe('which facts a subscription wants', () => {
  it('takes a segment fact of a segment it names, and not one of another segment', () => {
    const s = { events: ['segment.entered', 'segment.exited'], segments: ['seg_a'] };
    const of = (type: string, id: string) => ({ type, data: { segment_id: id, profile_id: 'p' } });
    expect(subscriptionWants(s, of('segment.entered', 'seg_a'))).toBe(true);
    expect(subscriptionWants(s, of('segment.exited', 'seg_a'))).toBe(true);
    expect(subscriptionWants(s, of('segment.entered', 'seg_b'))).toBe(false);
  });

  it('takes segment facts of every segment when it names none', () => {
    const s = { events: ['segment.entered'], segments: [] };
    expect(subscriptionWants(s, { type: 'segment.entered', data: { segment_id: 'seg_z' } })).toBe(true);
  });

  it('refuses a segment fact without a segment id when it filters by segment', () => {
    const s = { events: ['segment.exited'], segments: ['seg_a'] };
    expect(subscriptionWants(s, { type: 'segment.exited', data: {} })).toBe(false);
    expect(subscriptionWants(s, { type: 'segment.exited', data: { segment_id: 7 } })).toBe(false);
  });

  it('never takes a kind the subscription did not choose, whatever its segments', () => {
    fc.assert(
      fc.property(sub, fact, (s, f) => {
        if (!s.events.includes(f.type)) expect(subscriptionWants(s, f)).toBe(false);
      }),
    );
  });

  it('lets the segment filter alone decide nothing but segment facts', () => {
    fc.assert(
      fc.property(sub, fact, (s, f) => {
        fc.pre(!SEGMENT_KINDS.includes(f.type));
        expect(subscriptionWants(s, f)).toBe(s.events.includes(f.type));
      }),
    );
  });

  it('takes a chosen segment fact exactly when the filter is empty or names its segment', () => {
    fc.assert(
      fc.property(sub, fact, (s, f) => {
        fc.pre(SEGMENT_KINDS.includes(f.type) && s.events.includes(f.type));
        const expected = s.segments.length === 0 || s.segments.includes(f.data.segment_id);
        expect(subscriptionWants(s, f)).toBe(expected);
      }),
    );
  });

  it('filters more with every segment taken out of a non-empty filter, never less', () => {
    fc.assert(
      fc.property(sub, fact, (s, f) => {
        fc.pre(s.segments.length > 1);
        const narrower = { ...s, segments: s.segments.slice(1) };
        if (subscriptionWants(narrower, f)) expect(subscriptionWants(s, f)).toBe(true);
      }),
    );
  });
});
