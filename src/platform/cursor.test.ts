import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createCursorCodec, pageRequest, toPage } from './cursor';
import { AppError } from './errors';

const codec = createCursorCodec('test secret');

/** Keyset values as they come out of ORDER BY columns: numbers, strings, ISO dates, nulls. */
const keyset = fc.array(
  fc.oneof(
    fc.integer(),
    fc.string({ maxLength: 40 }),
    fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
    fc.constant(null),
  ),
  { minLength: 1, maxLength: 4 },
);

const refusedAsInvalid = (fn: () => unknown): boolean => {
  try {
    fn();
    return false;
  } catch (err) {
    return err instanceof AppError && err.code === 'INVALID_CURSOR' && err.status === 400;
  }
};

describe('cursor codec', () => {
  it('decodes what it encoded, for any keyset', () => {
    fc.assert(
      fc.property(keyset, (key) => {
        expect(codec.decode('profiles', codec.encode('profiles', key))).toEqual(key);
      }),
    );
  });

  it('never shows the keyset in clear text', () => {
    const cursor = codec.encode('profiles', ['2026-01-01T00:00:00.000Z', 'prf_secret_id']);
    expect(Buffer.from(cursor, 'base64url').toString('latin1')).not.toContain('prf_secret_id');
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
  });

  it('refuses a cursor in which any single byte was changed', () => {
    fc.assert(
      fc.property(keyset, fc.nat(), fc.integer({ min: 1, max: 255 }), (key, position, flip) => {
        const raw = Buffer.from(codec.encode('profiles', key), 'base64url');
        const i = position % raw.length;
        raw[i] = raw[i]! ^ flip;
        return refusedAsInvalid(() => codec.decode('profiles', raw.toString('base64url')));
      }),
    );
  });

  it('refuses a cursor with a character replaced, added or removed', () => {
    fc.assert(
      fc.property(keyset, fc.nat(), fc.constantFrom('replace', 'insert', 'delete'), (key, pos, edit) => {
        const c = codec.encode('profiles', key);
        const i = pos % c.length;
        const other = c[i] === 'A' ? 'B' : 'A';
        const changed =
          edit === 'replace'
            ? c.slice(0, i) + other + c.slice(i + 1)
            : edit === 'insert'
              ? c.slice(0, i) + other + c.slice(i)
              : c.slice(0, i) + c.slice(i + 1);
        // A change in the unused low bits of the last base64 character decodes to the same bytes.
        fc.pre(Buffer.compare(Buffer.from(changed, 'base64url'), Buffer.from(c, 'base64url')) !== 0);
        return refusedAsInvalid(() => codec.decode('profiles', changed));
      }),
    );
  });

  it('refuses a cursor of another collection', () => {
    fc.assert(
      fc.property(keyset, (key) =>
        refusedAsInvalid(() => codec.decode('apikeys', codec.encode('profiles', key))),
      ),
    );
  });

  it('refuses a cursor sealed with another secret (another installation)', () => {
    const foreign = createCursorCodec('another secret').encode('profiles', [1]);
    expect(refusedAsInvalid(() => codec.decode('profiles', foreign))).toBe(true);
  });

  it('refuses any string it did not issue', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 1200 }), (s) => refusedAsInvalid(() => codec.decode('x', s))),
    );
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 0, maxLength: 200 }), (bytes) =>
        refusedAsInvalid(() => codec.decode('x', Buffer.from(bytes).toString('base64url'))),
      ),
    );
  });
});

describe('pages', () => {
  const rows = [1, 2, 3, 4, 5].map((seq) => ({ seq }));

  it('reads the page size and the cursor from the query', () => {
    expect(pageRequest(codec, 'c', {})).toEqual({ limit: 50, after: null });
    const cursor = codec.encode('c', [7]);
    expect(pageRequest(codec, 'c', { limit: 3, cursor })).toEqual({ limit: 3, after: [7] });
    expect(refusedAsInvalid(() => pageRequest(codec, 'd', { cursor }))).toBe(true);
  });

  it('uses the extra row only to say whether there is more', () => {
    const page = toPage(
      codec,
      'c',
      { limit: 4, after: null },
      rows,
      (r) => [r.seq],
      (r) => r.seq,
    );
    expect(page.data).toEqual([1, 2, 3, 4]);
    expect(page.pagination.has_more).toBe(true);
    expect(codec.decode('c', page.pagination.next_cursor!)).toEqual([4]);

    const last = toPage(
      codec,
      'c',
      { limit: 5, after: null },
      rows,
      (r) => [r.seq],
      (r) => r.seq,
    );
    expect(last.pagination).toEqual({ limit: 5, next_cursor: null, has_more: false });
  });
});
