import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BUILTIN_JUNK,
  classifyAnonymousId,
  classifyIdentity,
  type Identifier,
  junkSet,
  junkSetFromSettings,
  legacyIdentifier,
  normalizeEmail,
  normalizeStoredIdentifier,
  normalizeText,
  suppressionHash,
  suppressionHashes,
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

/** Characters that draw nothing (Unicode category Cf), as look-alikes carry them. */
const INVISIBLE = [
  '\u200b',
  '\u200c',
  '\u200d',
  '\u2060',
  '\ufeff',
  '\u00ad',
  '\u200e',
  '\u202a',
  '\u{e0041}',
];
const invisible = fc.constantFrom(...INVISIBLE);
/** Letters with and without diacritics, so NFC and NFD spellings differ. */
const letter = fc.constantFrom(...'abcdeéèêëñøåçüöäiïjoósšžłțğ'.normalize('NFC'));
const word = fc.array(letter, { minLength: 1, maxLength: 8 }).map((l) => l.join(''));
/** Any text at all, astral planes, combining marks and format characters included. */
const anyText = fc.string({ unit: 'binary', maxLength: 40 });

/** Inserts invisible characters at the given positions (modulo the length). */
const sprinkle = (s: string, marks: Array<[number, string]>) => {
  const chars = [...s];
  for (const [at, mark] of marks) chars.splice(at % (chars.length + 1), 0, mark);
  return chars.join('');
};

/** How identifiers were classified before normalizeText (trim; e-mails and anonymous ids lower-cased). */
function classifiedBefore(raw: string): Identifier | null {
  const t = raw.trim();
  if (t === '' || BUILTIN_JUNK.includes(t.toLowerCase())) return null;
  if (t.includes('@')) {
    const at = t.lastIndexOf('@');
    return at <= 0 || at === t.length - 1 ? null : { type: 'email', value: t.toLowerCase() };
  }
  return classifyIdentity(t); // phones and external ids: ASCII input never reaches the new steps
}

describe('identifier normalization: look-alikes are one identifier', () => {
  it('is idempotent: a normalized value normalizes to itself, whatever the input', () => {
    fc.assert(
      fc.property(anyText, (raw) => {
        expect(normalizeText(normalizeText(raw))).toBe(normalizeText(raw));
        expect(normalizeEmail(normalizeEmail(raw))).toBe(normalizeEmail(raw));
        for (const classify of [classifyIdentity, classifyAnonymousId]) {
          const once = classify(raw);
          if (once) expect(classify(once.value)).toEqual(once);
        }
        const stored = classifyIdentity(raw);
        if (stored) expect(normalizeStoredIdentifier(stored.type, stored.value)).toEqual(stored);
      }),
      { numRuns: 2000 },
    );
  });

  it('maps the NFC, NFD, zero-width, case and trailing-dot spellings of one address to one value', () => {
    fc.assert(
      fc.property(
        word,
        word,
        fc.constantFrom('com', 'y', 'example.org'),
        fc.boolean(),
        fc.array(fc.tuple(fc.nat(), invisible), { maxLength: 4 }),
        fc.constantFrom('', '.', '..'),
        fc.array(fc.boolean(), { minLength: 1 }),
        (local, host, tld, nfd, marks, dots, flips) => {
          const canonical = `${local}@${host}.${tld}`.normalize('NFC');
          let raw = `${local}@${host}.${tld}${dots}`;
          raw = nfd ? raw.normalize('NFD') : raw;
          raw = sprinkle(randomCase(raw, flips), marks);
          expect(classifyIdentity(` ${raw} `)).toEqual({ type: 'email', value: canonical });
          expect(normalizeEmail(raw)).toBe(canonical);
        },
      ),
    );
    // The issue's look-alikes of josé@x.y.
    for (const raw of [
      'jos\u00e9@x.y',
      'jose\u0301@x.y',
      'jose\u0301\u200b@x.y',
      'jos\u00e9@x.y.',
      'JOS\u00c9@X.Y',
    ])
      expect(classifyIdentity(raw)).toEqual({ type: 'email', value: 'jos\u00e9@x.y' });
  });

  it('maps the spellings of one external id to one value, case kept', () => {
    fc.assert(
      fc.property(
        word,
        fc.boolean(),
        fc.array(fc.tuple(fc.nat(), invisible), { maxLength: 4 }),
        (w, nfd, marks) => {
          const id = `CRM-${w}`;
          const raw = sprinkle(nfd ? id.normalize('NFD') : id, marks);
          expect(classifyIdentity(raw)).toEqual({ type: 'external_id', value: id.normalize('NFC') });
        },
      ),
    );
    // A phone that only an invisible character kept from looking like one is the phone.
    expect(classifyIdentity('+1 415\u200b555 2671')).toEqual({ type: 'phone', value: '+14155552671' });
  });

  it('leaves ASCII identifiers exactly as before (only an e-mail domain’s trailing dot goes)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary-ascii', maxLength: 40 }), (raw) => {
        const before = classifiedBefore(raw);
        const now = classifyIdentity(raw);
        if (before?.type === 'email' && before.value.endsWith('.')) {
          expect(now?.value ?? '').not.toMatch(/\.$/);
          return;
        }
        expect(now).toEqual(before);
        if (raw.trim() !== '' && !BUILTIN_JUNK.includes(raw.trim().toLowerCase()))
          expect(classifyAnonymousId(raw)).toEqual({ type: 'anonymous_id', value: raw.trim().toLowerCase() });
      }),
      { numRuns: 2000 },
    );
  });

  it('refuses what nothing is left of once invisible characters and trailing dots go', () => {
    expect(classifyIdentity('\u200b\u200d\ufeff')).toBeNull();
    expect(classifyIdentity('a@.')).toBeNull();
    expect(classifyIdentity('n\u200bull')).toBeNull();
    expect(classifyAnonymousId('\u2060anonymous')).toBeNull();
    expect(normalizeStoredIdentifier('email', '\u200b')).toBeNull();
  });

  it('applies the workspace junk list to look-alikes of its entries', () => {
    const junk = junkSetFromSettings({ junk_identifiers: ['test@example.com'] });
    expect(classifyIdentity('te\u200bst@example.com.', junk)).toBeNull();
  });
});

describe('suppression hashes across the normalization', () => {
  const ws = '11111111-1111-4111-8111-111111111111';
  const nfc = { type: 'email', value: 'jos\u00e9@x.y' } as const;

  it('covers the spellings older versions stored for the normal form', () => {
    const hashes = suppressionHashes(ws, nfc);
    for (const value of ['jos\u00e9@x.y', 'jose\u0301@x.y', 'jos\u00e9@x.y.', 'jose\u0301@x.y.'])
      expect(hashes).toContain(suppressionHash(ws, { type: 'email', value }));
  });

  it('covers what an older version made of the raw value, when it differs from today’s', () => {
    const raw = 'Jose\u0301\u200b@X.y';
    const legacy = legacyIdentifier(raw, 'identity');
    expect(legacy).toEqual({ type: 'email', value: 'jose\u0301\u200b@x.y' });
    expect(suppressionHashes(ws, classifyIdentity(raw)!, legacy)).toContain(suppressionHash(ws, legacy!));
    // ASCII input was classified then as now: nothing more to look up.
    expect(legacyIdentifier(' Ann@Example.com ', 'identity')).toBeNull();
    expect(legacyIdentifier('+1 415 555 2671', 'identity')).toBeNull();
  });

  it('gives ASCII identifiers the one hash they always had', () => {
    expect(suppressionHashes(ws, { type: 'external_id', value: 'CRM-1' })).toEqual([
      suppressionHash(ws, { type: 'external_id', value: 'CRM-1' }),
    ]);
  });
});
