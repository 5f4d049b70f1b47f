import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  emptyTraits,
  type Json,
  type JsonObject,
  mergeTraits,
  type TraitState,
  type TraitUpdate,
  timesOfProfile,
  traitsFromPayload,
} from './traits';

const at = (attributes: JsonObject, field_times: Record<string, number> = {}): TraitState => ({
  ...emptyTraits(),
  attributes,
  field_times,
});

const scalar = fc.oneof(
  fc.string({ maxLength: 4 }),
  fc.integer({ min: -5, max: 5 }),
  fc.boolean(),
  fc.constant(null),
);
const key = fc.constantFrom('a', 'b', 'c', 'plan', 'x/y', 'tags');
const json: fc.Arbitrary<Json> = fc.letrec<{ v: Json }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small' },
    scalar,
    fc.array(scalar, { maxLength: 3 }),
    fc.dictionary(key, tie('v'), { maxKeys: 3 }),
  ),
})).v;
const update: fc.Arbitrary<TraitUpdate> = fc.record(
  {
    email: fc.option(fc.constantFrom('a@x.io', 'b@x.io'), { nil: undefined }),
    first_name: fc.option(fc.oneof(fc.constantFrom('Ann', 'Bo'), fc.constant(null)), { nil: undefined }),
    attributes: fc.dictionary(key, json, { maxKeys: 4 }),
  },
  { requiredKeys: ['attributes'] },
);
const time = fc.integer({ min: 1, max: 1000 });

/** A realistic existing profile: the result of some earlier writes, so its field times are consistent. */
const history = fc
  .array(fc.tuple(update, time), { maxLength: 5 })
  .map((writes) => writes.reduce((s, [u, t]) => mergeTraits(s, u, t).state, emptyTraits()));

const values = (s: TraitState) => ({
  email: s.email,
  first_name: s.first_name,
  last_name: s.last_name,
  attributes: s.attributes,
});

describe('attribute merge rules', () => {
  it('adds keys the profile does not have', () => {
    const r = mergeTraits(at({ a: 1 }), { attributes: { b: 'x' } }, 10);
    expect(r.state.attributes).toEqual({ a: 1, b: 'x' });
    expect(r.changes).toEqual([{ path: '/attributes/b', old: null, new: 'x' }]);
  });

  it('replaces an array with an incoming array', () => {
    const r = mergeTraits(
      at({ tags: ['a', 'b'] }, { '/attributes/tags': 5 }),
      { attributes: { tags: ['c'] } },
      10,
    );
    expect(r.state.attributes.tags).toEqual(['c']);
  });

  it('turns a scalar meeting an incoming array into [existing, ...incoming]', () => {
    const r = mergeTraits(
      at({ tags: 'vip' }, { '/attributes/tags': 50 }),
      { attributes: { tags: ['new', 'beta'] } },
      10,
    );
    expect(r.state.attributes.tags).toEqual(['vip', 'new', 'beta']);
    expect(r.changes).toEqual([{ path: '/attributes/tags', old: 'vip', new: ['vip', 'new', 'beta'] }]);
  });

  it('appends an incoming scalar to an existing array, once', () => {
    const r = mergeTraits(at({ tags: ['a'] }), { attributes: { tags: 'b' } }, 10);
    expect(r.state.attributes.tags).toEqual(['a', 'b']);
    expect(mergeTraits(r.state, { attributes: { tags: 'b' } }, 11).state.attributes.tags).toEqual(['a', 'b']);
  });

  it('merges objects key by key', () => {
    const s = at({ plan: { tier: 'free', seats: 1 } }, { '/attributes/plan': 5 });
    const r = mergeTraits(s, { attributes: { plan: { tier: 'pro', trial: true } } }, 10);
    expect(r.state.attributes.plan).toEqual({ tier: 'pro', seats: 1, trial: true });
    expect(r.changes.map((c) => c.path)).toEqual(['/attributes/plan/tier', '/attributes/plan/trial']);
  });

  it('lets the newer event win a scalar, so a late event never overwrites a newer value', () => {
    const newer = mergeTraits(emptyTraits(), { first_name: 'New', attributes: { city: 'Oslo' } }, 200).state;
    const late = mergeTraits(newer, { first_name: 'Old', attributes: { city: 'Rome', zip: '1' } }, 100);
    expect(late.state.first_name).toBe('New');
    expect(late.state.attributes).toEqual({ city: 'Oslo', zip: '1' });
    expect(late.changes).toEqual([{ path: '/attributes/zip', old: null, new: '1' }]);
  });

  it('checks a nested scalar against the time its parent object was written', () => {
    const s = mergeTraits(emptyTraits(), { attributes: { plan: { tier: 'pro' } } }, 200).state;
    expect(mergeTraits(s, { attributes: { plan: { tier: 'free' } } }, 100).state.attributes.plan).toEqual({
      tier: 'pro',
    });
    expect(mergeTraits(s, { attributes: { plan: { tier: 'team' } } }, 300).state.attributes.plan).toEqual({
      tier: 'team',
    });
  });

  it('escapes keys in lineage paths as JSON pointers', () => {
    const r = mergeTraits(emptyTraits(), { attributes: { 'utm/source': 'ad', 'a~b': 1 } }, 1);
    expect(r.changes.map((c) => c.path)).toEqual(['/attributes/utm~1source', '/attributes/a~0b']);
  });

  it('merges a profile into another using that profile’s own field times', () => {
    const primary = mergeTraits(emptyTraits(), { first_name: 'P', attributes: { city: 'Oslo' } }, 100).state;
    const secondary = mergeTraits(emptyTraits(), { first_name: 'S', attributes: { city: 'Rome' } }, 50).state;
    const later = mergeTraits(secondary, { attributes: { city: 'Paris' } }, 150).state;
    const r = mergeTraits(
      primary,
      { ...later, attributes: later.attributes },
      timesOfProfile(later.field_times, 0),
    );
    expect(r.state.first_name).toBe('P');
    expect(r.state.attributes.city).toBe('Paris');
  });

  it('splits an identify payload into profile fields and attributes', () => {
    expect(
      traitsFromPayload({ email: ' Ann@X.io ', first_name: 7, last_name: { a: 1 }, plan: 'pro' }),
    ).toEqual({
      email: 'ann@x.io',
      first_name: '7',
      attributes: { last_name: { a: 1 }, plan: 'pro' },
    });
  });
});

describe('attribute merge properties', () => {
  it('is idempotent: applying the same write twice is applying it once', () => {
    fc.assert(
      fc.property(history, update, time, (s, u, t) => {
        const once = mergeTraits(s, u, t);
        const twice = mergeTraits(once.state, u, t);
        // The very same object: callers skip the write.
        expect(twice.state).toBe(once.state);
        expect(twice.changes).toEqual([]);
      }),
    );
  });

  it('ends with the same scalars whatever order events with distinct times arrive in', () => {
    const flat = fc.record(
      {
        first_name: fc.constantFrom('Ann', 'Bo', 'Cy'),
        attributes: fc.record(
          { a: scalar, b: scalar, o: fc.record({ x: scalar, y: scalar }, { requiredKeys: [] }) },
          { requiredKeys: [] },
        ),
      },
      { requiredKeys: [] },
    );
    const events = fc.uniqueArray(fc.tuple(flat, fc.integer({ min: 1, max: 10_000 })), {
      selector: ([, t]) => t,
      minLength: 1,
      maxLength: 6,
    });
    fc.assert(
      fc.property(events, fc.infiniteStream(fc.nat()), (evs, seeds) => {
        const shuffled = [...evs];
        const it = seeds[Symbol.iterator]();
        for (let i = shuffled.length - 1; i > 0; i--) {
          const j = (it.next().value as number) % (i + 1);
          [shuffled[i], shuffled[j]] = [shuffled[j]!, shuffled[i]!];
        }
        const apply = (list: typeof evs) =>
          list.reduce((s, [u, t]) => mergeTraits(s, u, t).state, emptyTraits());
        expect(values(apply(shuffled))).toEqual(values(apply(evs)));
      }),
    );
  });

  it('records a change exactly when a value changes', () => {
    fc.assert(
      fc.property(history, update, time, (s, u, t) => {
        const r = mergeTraits(s, u, t);
        const changed = JSON.stringify(values(r.state)) !== JSON.stringify(values(s));
        expect(r.changes.length > 0).toBe(changed);
      }),
    );
  });

  it('never loses an attribute key', () => {
    fc.assert(
      fc.property(history, update, time, (s, u, t) => {
        const after = Object.keys(mergeTraits(s, u, t).state.attributes);
        for (const k of Object.keys(s.attributes)) expect(after).toContain(k);
      }),
    );
  });
});
