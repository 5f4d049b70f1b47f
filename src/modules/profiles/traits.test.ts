import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  countTraitKeys,
  emptyTraits,
  type Json,
  type JsonObject,
  jsonBytes,
  mergeTraits,
  mergeTraitsInPlace,
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

describe('merging in place (the profile batch owns its states)', () => {
  it('changes the state exactly as the pure merge computes it', () => {
    fc.assert(
      fc.property(history, update, time, (s, u, t) => {
        const pure = mergeTraits(s, u, t);
        const own = structuredClone(s);
        const r = mergeTraitsInPlace(own, u, t);
        expect(own).toEqual(pure.state);
        expect(r.changes).toEqual(pure.changes);
        expect(r.growth).toBe(pure.growth);
        expect(r.moved).toBe(pure.state !== s);
      }),
    );
  });

  it('puts the state back exactly as it was when reverted', () => {
    fc.assert(
      fc.property(history, update, time, (s, u, t) => {
        const own = structuredClone(s);
        mergeTraitsInPlace(own, u, t).revert();
        expect(own).toEqual(s);
        expect(Object.keys(own.attributes)).toEqual(Object.keys(s.attributes));
      }),
    );
  });

  it('keeps the values of recorded changes apart from the state that later writes change', () => {
    const own = emptyTraits();
    const first = mergeTraitsInPlace(own, { attributes: { prefs: { news: true } } }, 1);
    mergeTraitsInPlace(own, { attributes: { prefs: { sms: false } } }, 2);
    expect(own.attributes.prefs).toEqual({ news: true, sms: false });
    expect(first.changes).toEqual([{ path: '/attributes/prefs', old: null, new: { news: true } }]);
  });
});

describe('attribute size and keys', () => {
  it('knows how many bytes a write grows the attributes by: exactly, or one more per key it adds', () => {
    fc.assert(
      fc.property(history, update, time, (s, u, t) => {
        const r = mergeTraits(s, u, t);
        const real = jsonBytes(r.state.attributes) - jsonBytes(s.attributes);
        expect(r.growth).toBeGreaterThanOrEqual(real);
        expect(r.growth - real).toBeLessThanOrEqual(r.changes.length);
      }),
    );
    const s = mergeTraits(emptyTraits(), { attributes: { plan: 'free', tags: ['a'] } }, 1).state;
    expect(mergeTraits(s, { attributes: { plan: 'team', tags: 'b', new: 1 } }, 2).growth).toBe(
      jsonBytes({ plan: 'team', tags: ['a', 'b'], new: 1 }) - jsonBytes(s.attributes),
    );
  });

  it('counts keys at every depth, inside arrays too, and stops past the limit', () => {
    expect(countTraitKeys({ a: 1, b: { c: [{ d: 1, e: 2 }, 3] } })).toBe(5);
    expect(countTraitKeys({ a: [1, 2, 3] })).toBe(1);
    const wide = Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`k${i}`, i]));
    expect(countTraitKeys(wide, 1000)).toBeGreaterThan(1000);
  });
});

describe('the cost of a merge', () => {
  /** A profile of `groups` × 1000 keys, each with its own recorded time. */
  const profileOf = (groups: number): TraitState => {
    const attrs = (v: number) =>
      Object.fromEntries(
        Array.from({ length: groups }, (_, g) => [
          `g${g}`,
          Object.fromEntries(Array.from({ length: 1000 }, (_, k) => [`k${k}`, v])),
        ]),
      );
    const created = mergeTraits(emptyTraits(), { attributes: attrs(1) }, 1).state;
    return mergeTraits(created, { attributes: attrs(2) }, 2).state;
  };
  /** 1000 keys: 900 changed values, a 99-key group replaced by a scalar, new keys. */
  const write: TraitUpdate = {
    attributes: {
      g0: Object.fromEntries(Array.from({ length: 900 }, (_, k) => [`k${k}`, 3])),
      g1: 'flattened',
      fresh: Object.fromEntries(Array.from({ length: 98 }, (_, k) => [`n${k}`, 3])),
    },
  };
  /**
   * How many times a merge in place reads or writes the profile's field times (a listing of its
   * keys counts one per key): the bookkeeping whose cost once grew with the whole profile
   * (trait-times.ts), counted instead of timed. Both merges share it; the pure one copies the map
   * once besides.
   */
  const fieldTimeOperations = (state: TraitState, update: TraitUpdate, time = 3) => {
    let n = 0;
    const count = (by = 1) => {
      n += by;
    };
    const counted = new Proxy(state.field_times, {
      get(t, p, r) {
        count();
        return Reflect.get(t, p, r);
      },
      set(t, p, v, r) {
        count();
        return Reflect.set(t, p, v, r);
      },
      deleteProperty(t, p) {
        count();
        return Reflect.deleteProperty(t, p);
      },
      has(t, p) {
        count();
        return Reflect.has(t, p);
      },
      ownKeys(t) {
        count(Object.keys(t).length);
        return Reflect.ownKeys(t);
      },
    });
    const r = mergeTraitsInPlace({ ...state, field_times: counted }, update, time);
    return { operations: n, changes: r.changes.length };
  };

  it('touches as many field times for a 1,000-key write on a 40,000-key profile as on a 5,000-key one', () => {
    const small = fieldTimeOperations(profileOf(5), write);
    const big = fieldTimeOperations(profileOf(40), write);
    expect(small.changes).toBe(900 + 1 + 1);
    expect(big).toEqual(small);
    // In proportion to the write: a few operations per key written or replaced.
    expect(small.operations).toBeLessThan(10 * 1000);
  });

  it('grows linearly with the size of the write: 8× the keys, 8× the work (the quadratic merge was 64×)', () => {
    // A profile of exactly the keys written, each written again: every key is looked up, changed
    // and re-timed. Work is counted (field-time operations), so the figure is the same on any
    // machine; the time it takes is bench/traits.bench.ts's.
    const update = (keys: number, v: number): TraitUpdate => ({
      attributes: Object.fromEntries(
        Array.from({ length: keys / 100 }, (_, g) => [
          `g${g}`,
          Object.fromEntries(Array.from({ length: 100 }, (_, k) => [`k${k}`, v])),
        ]),
      ),
    });
    const cost = (keys: number) => {
      const s = mergeTraits(mergeTraits(emptyTraits(), update(keys, 1), 1).state, update(keys, 2), 2).state;
      const r = fieldTimeOperations(s, update(keys, 3));
      expect(r.changes).toBe(keys);
      return r.operations;
    };
    const ratio = cost(40_000) / cost(5_000);
    expect(ratio).toBeGreaterThanOrEqual(7.9);
    expect(ratio).toBeLessThanOrEqual(8.1);
  });
});
