import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Identifier, IdentifierType } from './identifiers';
import { conflicts, decide, MERGE_CAP, type OwnerView } from './resolve';

const email = (value: string): Identifier => ({ type: 'email', value });
const anon = (value: string): Identifier => ({ type: 'anonymous_id', value });
const owner = (id: string, ids: Array<[IdentifierType, string]> = [], mergedCount = 0): OwnerView => {
  const identities = new Map<IdentifierType, Set<string>>();
  for (const [t, v] of ids) identities.set(t, (identities.get(t) ?? new Set()).add(v));
  return { id, identities, mergedCount };
};

describe('identity resolution', () => {
  it('joins the profile that owns the identity, which gains a new anonymous id', () => {
    expect(
      decide({
        identity: email('a@x.io'),
        anonymous: anon('a1'),
        identityOwner: owner('P'),
        anonymousOwner: null,
      }),
    ).toEqual({ kind: 'join', profileId: 'P', attach: [anon('a1')] });
  });

  it('joins the anonymous profile, which gains the identity', () => {
    expect(
      decide({
        identity: email('a@x.io'),
        anonymous: anon('a1'),
        identityOwner: null,
        anonymousOwner: owner('Q'),
      }),
    ).toEqual({ kind: 'join', profileId: 'Q', attach: [email('a@x.io')] });
  });

  it('creates a profile when nobody owns either identifier', () => {
    expect(
      decide({ identity: email('a@x.io'), anonymous: anon('a1'), identityOwner: null, anonymousOwner: null }),
    ).toEqual({
      kind: 'create',
      attach: [email('a@x.io'), anon('a1')],
    });
    expect(
      decide({ identity: null, anonymous: anon('a1'), identityOwner: null, anonymousOwner: null }),
    ).toEqual({
      kind: 'create',
      attach: [anon('a1')],
    });
  });

  it('merges the anonymous profile into the identified one', () => {
    const d = decide({
      identity: email('a@x.io'),
      anonymous: anon('a1'),
      identityOwner: owner('P', [['email', 'a@x.io']]),
      anonymousOwner: owner('Q', [['phone', '+14155552671']]),
    });
    expect(d).toEqual({ kind: 'merge', primary: 'P', secondary: 'Q' });
  });

  it('never merges two profiles holding different identifiers of one type', () => {
    const d = decide({
      identity: email('b@x.io'),
      anonymous: anon('shared-device'),
      identityOwner: owner('P', [['email', 'b@x.io']]),
      anonymousOwner: owner('Q', [['email', 'a@x.io']]),
    });
    expect(d).toEqual({ kind: 'join', profileId: 'P', attach: [], refused: 'unique_identifier' });
  });

  it('gives a second person on a shared device a profile of their own', () => {
    const d = decide({
      identity: email('b@x.io'),
      anonymous: anon('shared-device'),
      identityOwner: null,
      anonymousOwner: owner('Q', [['email', 'a@x.io']]),
    });
    expect(d).toEqual({ kind: 'create', attach: [email('b@x.io')], refused: 'unique_identifier' });
  });

  it('refuses a merge that would pass the cap of merged ids', () => {
    const base = { identity: email('a@x.io'), anonymous: anon('a1'), anonymousOwner: owner('Q', [], 0) };
    expect(decide({ ...base, identityOwner: owner('P', [], MERGE_CAP - 1) }).kind).toBe('merge');
    expect(decide({ ...base, identityOwner: owner('P', [], MERGE_CAP) })).toEqual({
      kind: 'join',
      profileId: 'P',
      attach: [],
      refused: 'merge_cap',
    });
  });

  it('drops an event with no usable identifier, and one whose only owner-less identifier is suppressed', () => {
    expect(decide({ identity: null, anonymous: null, identityOwner: null, anonymousOwner: null })).toEqual({
      kind: 'drop',
      reason: 'no_identifier',
    });
    const suppressed = {
      identity: email('gone@x.io'),
      anonymous: anon('a9'),
      identityOwner: null,
      anonymousOwner: null,
    };
    expect(decide({ ...suppressed, identitySuppressed: true })).toEqual({
      kind: 'drop',
      reason: 'suppressed',
    });
  });

  it('joins a live profile through an unsuppressed identifier without linking the suppressed one', () => {
    expect(
      decide({
        identity: email('gone@x.io'),
        anonymous: anon('a1'),
        identityOwner: null,
        anonymousOwner: owner('Q'),
        identitySuppressed: true,
      }),
    ).toEqual({ kind: 'join', profileId: 'Q', attach: [] });
  });
});

describe('identity resolution properties', () => {
  const type = fc.constantFrom<IdentifierType>('email', 'phone', 'external_id');
  const view = (id: string) =>
    fc
      .tuple(
        fc.array(fc.tuple(type, fc.constantFrom('v1', 'v2', 'v3')), { maxLength: 3 }),
        fc.nat({ max: 120 }),
      )
      .map(([ids, n]) => owner(id, ids, n));
  const input = fc.record({
    identity: fc.option(fc.tuple(type, fc.constantFrom('v1', 'v2')).map(([t, v]) => ({ type: t, value: v }))),
    anonymous: fc.option(fc.constant(anon('a1'))),
    identityOwner: fc.option(view('P')),
    anonymousOwner: fc.option(view('Q')),
  });

  it('never merges conflicting profiles and never passes the cap', () => {
    fc.assert(
      fc.property(input, (i) => {
        const d = decide(i);
        if (d.kind !== 'merge') return;
        expect(conflicts(i.identityOwner!, i.anonymousOwner!)).toBe(false);
        expect(i.identityOwner!.mergedCount + 1 + i.anonymousOwner!.mergedCount).toBeLessThanOrEqual(
          MERGE_CAP,
        );
      }),
    );
  });

  it('never attaches an identity to a profile that holds another of its type', () => {
    fc.assert(
      fc.property(input, (i) => {
        const d = decide(i);
        if (d.kind !== 'join') return;
        const target = [i.identityOwner, i.anonymousOwner].find((o) => o?.id === d.profileId)!;
        for (const a of d.attach) {
          if (a.type === 'anonymous_id') continue;
          const held = target.identities.get(a.type);
          expect(!held || held.size === 0 || held.has(a.value)).toBe(true);
        }
      }),
    );
  });

  it('always lands the event on the identity owner when there is one', () => {
    fc.assert(
      fc.property(input, (i) => {
        const d = decide(i);
        if (!i.identity || !i.identityOwner) return;
        expect(d.kind === 'merge' ? d.primary : d.kind === 'join' ? d.profileId : null).toBe('P');
      }),
    );
  });
});
