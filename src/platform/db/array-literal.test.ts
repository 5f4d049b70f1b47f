import { createRequire } from 'node:module';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { arrayLiteral, encodeArrayParams } from './array-literal';

// pg's own encoder of parameters: the literal must be the one it would have sent.
const { prepareValue } = createRequire(import.meta.url)('pg/lib/utils') as {
  prepareValue: (v: unknown) => unknown;
};

const element = fc.oneof(
  fc.string({ unit: 'binary' }),
  fc.constantFrom('', 'NULL', 'a,b', '{x}', '"', '\\', '\\"', ' spaced ', 'ümlaut ✓ 🚀'),
  fc.uuid(),
  fc.integer(),
  fc.double(),
  fc.bigInt(),
  fc.boolean(),
  fc.constant(null),
);

describe('arrayLiteral', () => {
  it('builds the same literal as pg for any flat array of strings, numbers, booleans and nulls', () => {
    fc.assert(
      fc.property(fc.array(element, { maxLength: 30 }), (values) => {
        expect(arrayLiteral(values)).toBe(prepareValue(values));
      }),
      { numRuns: 2000 },
    );
  });

  it('leaves dates, buffers, nested arrays and objects to pg', () => {
    for (const odd of [[new Date(0)], [Buffer.from('x')], [['a']], [{ a: 1 }]]) {
      expect(arrayLiteral(odd)).toBeNull();
    }
  });

  it('encodes only the array parameters it can, and copies nothing when there are none', () => {
    const scalars = ['a', 1, null];
    expect(encodeArrayParams(scalars)).toBe(scalars);
    expect(encodeArrayParams([['x', 'y'], 2, [new Date(0)]])).toEqual(['{"x","y"}', 2, [new Date(0)]]);
    expect(encodeArrayParams(undefined)).toBeUndefined();
  });
});
