import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BUILTIN_JUNK,
  classifyAnonymousId,
  classifyIdentity,
  junkSet,
  junkSetFromSettings,
} from './identifiers';

const pad = fc.constantFrom('', ' ', '  ', '\t', '\n ');
const randomCase = (s: string, flips: boolean[]) =>
  [...s].map((c, i) => (flips[i % flips.length] ? c.toUpperCase() : c.toLowerCase())).join('');

describe('identity classification', () => {
  it('reads anything with @ as an e-mail, trimmed and lower-cased', () => {
    const local = fc.stringMatching(/^[a-z0-9._+-]{1,20}$/);
    const domain = fc.stringMatching(/^[a-z0-9-]{1,10}\.[a-z]{2,5}$/);
    fc.assert(
      fc.property(local, domain, pad, pad, fc.array(fc.boolean(), { minLength: 1 }), (l, d, a, b, flips) => {
        const raw = `${a}${randomCase(`${l}@${d}`, flips)}${b}`;
        expect(classifyIdentity(raw)).toEqual({ type: 'email', value: `${l}@${d}` });
      }),
    );
  });

  it('normalizes every formatting of one phone number to the same E.164 value', () => {
    const numbers = [
      ['+14155552671', ['+1', '415', '555', '2671']],
      ['+442079460958', ['+44', '20', '7946', '0958']],
      ['+33612345678', ['+33', '6', '12', '34', '56', '78']],
    ] as const;
    const sep = fc.constantFrom(' ', '-', '.', '');
    fc.assert(
      fc.property(
        fc.constantFrom(...numbers),
        fc.array(sep, { minLength: 6, maxLength: 6 }),
        pad,
        ([e164, parts], seps, p) => {
          const raw = p + parts.map((x, i) => (i === 0 ? x : `${seps[i - 1]}${x}`)).join('') + p;
          expect(classifyIdentity(raw)).toEqual({ type: 'phone', value: e164 });
        },
      ),
    );
    expect(classifyIdentity('+1 (415) 555-2671')).toEqual({ type: 'phone', value: '+14155552671' });
  });

  it('keeps test numbers of possible length as phones, and impossible ones as external ids', () => {
    expect(classifyIdentity('+1 555 555 0100')).toEqual({ type: 'phone', value: '+15555550100' });
    expect(classifyIdentity('+123')).toEqual({ type: 'external_id', value: '+123' });
    expect(classifyIdentity('+99999999999999999')).toEqual({
      type: 'external_id',
      value: '+99999999999999999',
    });
  });

  it('reads everything else as an external id, trimmed but case kept', () => {
    expect(classifyIdentity('  CRM-00042 ')).toEqual({ type: 'external_id', value: 'CRM-00042' });
    expect(classifyIdentity('4155552671')).toEqual({ type: 'external_id', value: '4155552671' });
  });

  it('is stable: classifying a normalized value gives it back unchanged', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), (raw) => {
        const once = classifyIdentity(raw);
        if (once) expect(classifyIdentity(once.value)).toEqual(once);
      }),
    );
  });

  it('never links a junk value, whatever its case or padding', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...BUILTIN_JUNK),
        pad,
        pad,
        fc.array(fc.boolean(), { minLength: 1 }),
        (j, a, b, flips) => {
          const raw = `${a}${randomCase(j, flips)}${b}`;
          expect(classifyIdentity(raw)).toBeNull();
          expect(classifyAnonymousId(raw)).toBeNull();
        },
      ),
    );
    for (const v of [null, undefined, 0, {}, [], '@', 'a@', '@b', 'x'.repeat(501)])
      expect(classifyIdentity(v)).toBeNull();
  });

  it('honours the workspace list, also in its normalized form', () => {
    const junk = junkSetFromSettings({
      junk_identifiers: ['test@example.com', '+1 415 555 2671', 'DEMO', 42],
    });
    expect(classifyIdentity('Test@Example.com ', junk)).toBeNull();
    expect(classifyIdentity('+14155552671', junk)).toBeNull();
    expect(classifyIdentity('demo', junk)).toBeNull();
    expect(classifyIdentity('real@example.com', junk)).toEqual({ type: 'email', value: 'real@example.com' });
    expect(junkSetFromSettings({ junk_identifiers: 'not a list' }).size).toBe(junkSet().size);
  });

  it('gives anonymous ids their own type, lower-cased', () => {
    expect(classifyAnonymousId(' 0F8FAD5B-D9CB-469F-A165-70867728950E')).toEqual({
      type: 'anonymous_id',
      value: '0f8fad5b-d9cb-469f-a165-70867728950e',
    });
  });
});
