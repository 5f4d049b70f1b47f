import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type CursorScope, createCursorCodec, pageRequest, toPage } from './cursor';
import { AppError } from './errors';

const codec = createCursorCodec('test secret');

const WS = '6f1c2b9e-0000-4000-8000-000000000001';
const OTHER_WS = '6f1c2b9e-0000-4000-8000-000000000002';
const scopeOf = (collection: string, parent: string | null = null): CursorScope => ({
  collection,
  workspaceId: WS,
  parent,
});
const profiles = scopeOf('profiles');

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
        expect(codec.decode(profiles, codec.encode(profiles, key))).toEqual(key);
      }),
    );
  });

  it('never shows the keyset in clear text', () => {
    const cursor = codec.encode(profiles, ['2026-01-01T00:00:00.000Z', 'prf_secret_id']);
    expect(Buffer.from(cursor, 'base64url').toString('latin1')).not.toContain('prf_secret_id');
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
  });

  it('refuses a cursor in which any single byte was changed', () => {
    fc.assert(
      fc.property(keyset, fc.nat(), fc.integer({ min: 1, max: 255 }), (key, position, flip) => {
        const raw = Buffer.from(codec.encode(profiles, key), 'base64url');
        const i = position % raw.length;
        raw[i] = raw[i]! ^ flip;
        return refusedAsInvalid(() => codec.decode(profiles, raw.toString('base64url')));
      }),
    );
  });

  it('refuses a cursor with a character replaced, added or removed', () => {
    fc.assert(
      fc.property(keyset, fc.nat(), fc.constantFrom('replace', 'insert', 'delete'), (key, pos, edit) => {
        const c = codec.encode(profiles, key);
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
        return refusedAsInvalid(() => codec.decode(profiles, changed));
      }),
    );
  });

  it('refuses a cursor of another collection', () => {
    fc.assert(
      fc.property(keyset, (key) =>
        refusedAsInvalid(() => codec.decode(scopeOf('apikeys'), codec.encode(profiles, key))),
      ),
    );
  });

  it('refuses a cursor sealed with another secret (another installation)', () => {
    const foreign = createCursorCodec('another secret').encode(profiles, [1]);
    expect(refusedAsInvalid(() => codec.decode(profiles, foreign))).toBe(true);
  });

  it('refuses any string it did not issue', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 1200 }), (s) =>
        refusedAsInvalid(() => codec.decode(scopeOf('x'), s)),
      ),
    );
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 0, maxLength: 200 }), (bytes) =>
        refusedAsInvalid(() => codec.decode(scopeOf('x'), Buffer.from(bytes).toString('base64url'))),
      ),
    );
  });
});

describe('cursor scope', () => {
  /** Scopes drawn from few values, so that equal and nearly-equal scopes both come up often. */
  const scope: fc.Arbitrary<CursorScope> = fc.record({
    collection: fc.constantFrom('profiles', 'profile-events', 'orders'),
    workspaceId: fc.constantFrom(WS, OTHER_WS),
    parent: fc.constantFrom(null, '', 'p1', 'p2', 'null'),
    filter: fc.option(
      fc.dictionary(
        fc.constantFrom('email', 'status', 'profile_id'),
        fc.constantFrom('a', 'b', '', 'null', undefined),
      ),
      { nil: undefined },
    ),
  });
  /** What a scope means: undefined filters are no filters, and their order does not matter. */
  const meaning = (s: CursorScope) =>
    JSON.stringify([
      s.collection,
      s.workspaceId,
      s.parent,
      Object.entries(s.filter ?? {})
        .filter(([, v]) => v !== undefined)
        .sort(([a], [b]) => a.localeCompare(b)),
    ]);

  it('accepts a cursor exactly in the scope it was issued for', () => {
    fc.assert(
      fc.property(keyset, scope, scope, (key, issued, used) => {
        const cursor = codec.encode(issued, key);
        if (meaning(issued) === meaning(used)) expect(codec.decode(used, cursor)).toEqual(key);
        else expect(refusedAsInvalid(() => codec.decode(used, cursor))).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it.each([
    ['another workspace', { ...profiles, workspaceId: OTHER_WS }],
    ['another collection', scopeOf('apikeys')],
    ['a parent where there was none', scopeOf('profiles', 'p1')],
  ])('refuses a top-level cursor in %s', (_label, used) => {
    const cursor = codec.encode(profiles, [1]);
    expect(refusedAsInvalid(() => codec.decode(used, cursor))).toBe(true);
  });

  it('refuses a profile-events cursor for another profile, or the same profile in another workspace', () => {
    const cursor = codec.encode(scopeOf('profile-events', 'p1'), ['2026-01-01T00:00:00.000Z', 3]);
    expect(codec.decode(scopeOf('profile-events', 'p1'), cursor)).toEqual(['2026-01-01T00:00:00.000Z', 3]);
    expect(refusedAsInvalid(() => codec.decode(scopeOf('profile-events', 'p2'), cursor))).toBe(true);
    expect(refusedAsInvalid(() => codec.decode(scopeOf('profile-events'), cursor))).toBe(true);
    const elsewhere = { ...scopeOf('profile-events', 'p1'), workspaceId: OTHER_WS };
    expect(refusedAsInvalid(() => codec.decode(elsewhere, cursor))).toBe(true);
    expect(refusedAsInvalid(() => codec.decode(scopeOf('profile-lineage', 'p1'), cursor))).toBe(true);
  });

  it('cannot tell parts apart by where a separator would fall', () => {
    // Each pair would read the same if the parts were only joined with a separator.
    const pairs: Array<[CursorScope, CursorScope]> = [
      [scopeOf('a:b', 'c'), scopeOf('a', 'b:c')],
      [
        { collection: 'x', workspaceId: WS, parent: null, filter: { a: 'b,c' } },
        { collection: 'x', workspaceId: WS, parent: null, filter: { a: 'b', c: undefined } },
      ],
      [scopeOf('x', 'null'), scopeOf('x', null)],
      [scopeOf('x', ''), scopeOf('x', null)],
    ];
    for (const [issued, used] of pairs) {
      expect(refusedAsInvalid(() => codec.decode(used, codec.encode(issued, [1])))).toBe(true);
    }
  });

  it('refuses to seal or open a cursor without a workspace or a collection', () => {
    expect(() => codec.encode({ collection: 'x', workspaceId: '', parent: null }, [1])).toThrow(/workspace/);
    expect(() => codec.decode({ collection: '', workspaceId: WS, parent: null }, 'A'.repeat(40))).toThrow(
      /collection/,
    );
    // @ts-expect-error the workspace is a required part of every scope
    expect(() => codec.encode({ collection: 'x', parent: null }, [1])).toThrow();
    // @ts-expect-error so is the parent: a top-level collection says null
    codec.encode({ collection: 'x', workspaceId: WS }, [1]);
  });
});

describe('pages', () => {
  const rows = [1, 2, 3, 4, 5].map((seq) => ({ seq }));
  const scope = scopeOf('c');

  it('reads the page size and the cursor from the query', () => {
    expect(pageRequest(codec, scope, {})).toEqual({
      limit: 50,
      after: null,
      scope: { ...scope, filter: {} },
    });
    const cursor = codec.encode(scope, [7]);
    expect(pageRequest(codec, scope, { limit: 3, cursor })).toMatchObject({ limit: 3, after: [7] });
    expect(refusedAsInvalid(() => pageRequest(codec, scopeOf('d'), { cursor }))).toBe(true);
  });

  it('binds every query parameter but limit and cursor, so a cursor keeps its filters', () => {
    const first = pageRequest(codec, scope, { limit: 1, email: 'a@example.com', status: undefined });
    const cursor = toPage(
      codec,
      first,
      rows,
      (r) => [r.seq],
      (r) => r.seq,
    ).pagination.next_cursor!;
    // The same filters (undefined ones are absent) with another page size: the keyset still holds.
    expect(pageRequest(codec, scope, { limit: 3, cursor, email: 'a@example.com' }).after).toEqual([1]);
    for (const other of [{}, { email: 'b@example.com' }, { email: 'a@example.com', status: 'x' }]) {
      expect(refusedAsInvalid(() => pageRequest(codec, scope, { cursor, ...other }))).toBe(true);
    }
  });

  it('uses the extra row only to say whether there is more', () => {
    const page = toPage(
      codec,
      pageRequest(codec, scope, { limit: 4 }),
      rows,
      (r) => [r.seq],
      (r) => r.seq,
    );
    expect(page.data).toEqual([1, 2, 3, 4]);
    expect(page.pagination.has_more).toBe(true);
    expect(codec.decode({ ...scope, filter: {} }, page.pagination.next_cursor!)).toEqual([4]);

    const last = toPage(
      codec,
      pageRequest(codec, scope, { limit: 5 }),
      rows,
      (r) => [r.seq],
      (r) => r.seq,
    );
    expect(last.pagination).toEqual({ limit: 5, next_cursor: null, has_more: false });
  });
});
