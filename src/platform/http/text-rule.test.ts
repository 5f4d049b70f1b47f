import { isUtf8 } from 'node:buffer';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { findUnstorable, firstInvalidUtf8, isStorableText, MAX_JSON_DEPTH } from './text-rule';

const paths = (v: unknown) => findUnstorable(v).map((d) => d.path);

describe('the text rule', () => {
  it('accepts exactly the strings PostgreSQL can store (property)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (s) => {
        const hasNul = s.includes('\u0000');
        const wellFormed = Buffer.from(s, 'utf8').toString('utf8') === s;
        expect(isStorableText(s)).toBe(!hasNul && wellFormed);
      }),
      { seed: 4, numRuns: 500 },
    );
    fc.assert(
      fc.property(
        fc.string({
          unit: fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c)),
          minLength: 1,
        }),
        (s) => {
          // A string made only of surrogate code units is storable only if they pair up exactly.
          expect(isStorableText(s)).toBe(Buffer.from(s, 'utf8').toString('utf8') === s);
        },
      ),
      { seed: 5, numRuns: 500 },
    );
  });

  it('names every bad string, key and number by its JSON pointer, in document order', () => {
    const value = {
      first_name: 'x\udfff',
      ok: ['fine', 'a\u0000b', 1e300],
      'a/b': { 'c~d': Number.POSITIVE_INFINITY },
      attributes: { '\ud800k': 1 },
    };
    expect(findUnstorable(value)).toEqual([
      { path: '/first_name', message: 'must not contain NUL characters or unpaired surrogates' },
      { path: '/ok/1', message: 'must not contain NUL characters or unpaired surrogates' },
      { path: '/a~1b/c~0d', message: expect.stringMatching(/finite number/) },
      { path: '/attributes/\uFFFDk', message: 'key must not contain NUL characters or unpaired surrogates' },
    ]);
  });

  it('skips the string checks when the caller knows there can be none, never the numbers', () => {
    expect(findUnstorable({ a: 'x\u0000', n: Number.NEGATIVE_INFINITY }, false).map((d) => d.path)).toEqual([
      '/n',
    ]);
  });

  it('refuses nesting deeper than the limit without recursing into it', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(paths(deep)).toEqual([`/${Array(MAX_JSON_DEPTH).fill('0').join('/')}`]);
    let ok: unknown = 'x';
    for (let i = 0; i < MAX_JSON_DEPTH; i++) ok = { k: ok };
    expect(paths(ok)).toEqual([]);
  });

  it('accepts a JSON value exactly when all its strings and keys are storable (property)', () => {
    const storable = (s: string) => !s.includes('\u0000') && Buffer.from(s, 'utf8').toString('utf8') === s;
    const texts = (v: unknown): string[] =>
      typeof v === 'string'
        ? [v]
        : typeof v === 'object' && v !== null
          ? Object.entries(v).flatMap(([k, x]) => [...(Array.isArray(v) ? [] : [k]), ...texts(x)])
          : [];
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6, stringUnit: 'binary' }), (v) => {
        expect(findUnstorable(v).length === 0).toBe(texts(v).every(storable));
      }),
      { seed: 6, numRuns: 300 },
    );
  });

  it('reports at most 100 problems', () => {
    expect(findUnstorable(Array(500).fill('\u0000'))).toHaveLength(100);
  });

  it('finds the offset of the first byte that is not UTF-8 (property)', () => {
    const at = (bytes: number[]) => firstInvalidUtf8(Uint8Array.from(bytes));
    expect(at([0x61, 0xff])).toBe(1);
    expect(at([0x61, 0xed, 0xa0, 0x80])).toBe(1); // an encoded surrogate (CESU-8)
    expect(at([0xc0, 0x80])).toBe(0); // overlong NUL
    expect(at([0xe2, 0x82])).toBe(0); // truncated
    expect(at([0xe2, 0x82, 0xac])).toBe(-1);
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 40 }), (bytes) => {
        const i = firstInvalidUtf8(bytes);
        expect(i === -1).toBe(isUtf8(bytes));
        if (i >= 0) expect(isUtf8(bytes.subarray(0, i))).toBe(true);
      }),
      { seed: 7, numRuns: 1000 },
    );
  });

  it('finds the same offset whatever the chunks the native check is given (property)', () => {
    // Valid characters of every length, and now and then a bad byte, so chunk ends fall everywhere.
    const piece = fc.oneof(
      fc.constantFrom('a', 'é', '€', '😀').map((c) => [...Buffer.from(c)]),
      fc.constantFrom([0xff], [0x80], [0xe2, 0x82], [0xed, 0xa0, 0x80], [0xc0, 0x80]),
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 30 }), fc.integer({ min: 1, max: 9 }), (pieces, chunk) => {
        const bytes = Uint8Array.from(pieces.flat());
        expect(firstInvalidUtf8(bytes, chunk)).toBe(firstInvalidUtf8(bytes, Number.POSITIVE_INFINITY));
      }),
      { seed: 8, numRuns: 2000 },
    );
  });
});
