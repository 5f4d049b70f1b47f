import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { Type } from 'typebox';
import { AppError } from './errors';

/**
 * The set a cursor pages through. A cursor is valid only for the very scope it was issued for, so
 * every part of it is bound into the cursor (as AES-GCM associated data): a cursor of another
 * workspace, another parent resource, another filter or another collection is refused
 * (400 INVALID_CURSOR) instead of silently paging a set the client never started.
 */
export interface CursorScope {
  /** The collection's name, e.g. `profile-events`. */
  readonly collection: string;
  /** The workspace of the key that asked. */
  readonly workspaceId: string;
  /**
   * The parent resource of a nested collection, exactly as the client named it in the path (e.g.
   * the profile id of `/tenant/profiles/{id}/events`), or null for a top-level collection. A
   * merged-away id keeps its cursors: they stay bound to that id, not to the survivor it reads.
   */
  readonly parent: string | null;
  /**
   * The filters that narrow the set (query parameters other than `limit` and `cursor`), as
   * validated; undefined ones are absent. `pageRequest` fills this from the query itself.
   */
  readonly filter?: Readonly<Record<string, unknown>> | undefined;
}

/**
 * Opaque, tamper-evident keyset cursors. The cursor is the last row's sort key, sealed with
 * AES-256-GCM: clients cannot read it (no internal ids leak), cannot forge or alter it (the tag
 * fails), and it is refused outside its scope (the whole `CursorScope` is bound in as associated
 * data). Every process sharing a database shares the key (see system_settings).
 */
export interface CursorCodec {
  encode(scope: CursorScope, key: readonly unknown[]): string;
  decode(scope: CursorScope, cursor: string): unknown[];
}

/**
 * The associated data of a scope: one canonical JSON text, so equal scopes give equal bytes
 * (filters sorted by name, undefined ones left out) and distinct scopes never collide (JSON quotes
 * and escapes every part, so no value can pass for a separator).
 */
export function scopeAad(scope: CursorScope): Buffer {
  if (!scope.collection || !scope.workspaceId) {
    // A programming error, not a client's: every collection is paged within one workspace.
    throw new Error('a cursor scope needs a collection and a workspace');
  }
  const filter = Object.entries(scope.filter ?? {})
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return Buffer.from(
    JSON.stringify(['cursor/v2', scope.collection, scope.workspaceId, scope.parent, filter]),
    'utf8',
  );
}

export function createCursorCodec(secret: string): CursorCodec {
  const key = createHash('sha256').update(`cursor:${secret}`).digest();
  return {
    encode(scope, keyValues) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(scopeAad(scope));
      const body = Buffer.concat([cipher.update(JSON.stringify(keyValues), 'utf8'), cipher.final()]);
      return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
    },
    decode(scope, cursor) {
      const aad = scopeAad(scope);
      const invalid = () => new AppError('INVALID_CURSOR', 'cursor is not valid for this collection');
      if (!/^[A-Za-z0-9_-]{30,1000}$/.test(cursor)) throw invalid();
      const raw = Buffer.from(cursor, 'base64url');
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
        decipher.setAAD(aad);
        decipher.setAuthTag(raw.subarray(12, 28));
        const text = Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
        const parsed: unknown = JSON.parse(text);
        if (!Array.isArray(parsed)) throw invalid();
        return parsed;
      } catch {
        throw invalid();
      }
    },
  };
}

export const DEFAULT_PAGE_LIMIT = 50;
export const MAX_PAGE_LIMIT = 500;

/** Query parameters every collection accepts. */
export const PageQuery = {
  limit: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: MAX_PAGE_LIMIT,
      default: DEFAULT_PAGE_LIMIT,
      description: 'Page size, 1–500.',
    }),
  ),
  cursor: Type.Optional(
    Type.String({ maxLength: 1000, description: 'Opaque cursor from the previous page’s `next_cursor`.' }),
  ),
};

export const PaginationSchema = Type.Object({
  limit: Type.Integer(),
  next_cursor: Type.Union([Type.String(), Type.Null()]),
  has_more: Type.Boolean(),
});

export interface PageRequest {
  limit: number;
  /** Decoded keyset of the last row already seen, or null for the first page. */
  after: unknown[] | null;
  /** The scope the cursor was checked against; `toPage` seals the next cursor for the same one. */
  scope: CursorScope;
}

export interface Page<T> {
  data: T[];
  pagination: { limit: number; next_cursor: string | null; has_more: boolean };
}

/** The query of a collection: the page parameters, and every other parameter is a filter. */
export type PageQueryValues = Readonly<Record<string, unknown>> & {
  readonly limit?: number | undefined;
  readonly cursor?: string | undefined;
};

/**
 * Reads the page size and the cursor of a collection's request. `query` is the whole validated
 * query string: every parameter but `limit` and `cursor` is a filter and is bound into the scope,
 * so a cursor issued for `?email=a` is refused for `?email=b` or for no filter (it would otherwise
 * silently skip the rows of the other set that sort before it). `limit` may change between pages:
 * the keyset stays a sound position whatever the page size.
 */
export function pageRequest(
  codec: CursorCodec,
  scope: Omit<CursorScope, 'filter'>,
  query: PageQueryValues,
): PageRequest {
  const { limit, cursor, ...filter } = query;
  const bound: CursorScope = { ...scope, filter };
  return {
    limit: limit ?? DEFAULT_PAGE_LIMIT,
    after: cursor ? codec.decode(bound, cursor) : null,
    scope: bound,
  };
}

/**
 * Builds a page from rows fetched with `LIMIT limit + 1`: the extra row only tells whether another
 * page exists. `keyOf` returns the keyset of a row (the ORDER BY columns, in order). The next
 * cursor is sealed for the request's own scope, so it is valid for the next request of that set only.
 */
export function toPage<Row, T>(
  codec: CursorCodec,
  req: PageRequest,
  rows: Row[],
  keyOf: (row: Row) => unknown[],
  present: (row: Row) => T,
): Page<T> {
  const hasMore = rows.length > req.limit;
  const pageRows = hasMore ? rows.slice(0, req.limit) : rows;
  const last = pageRows[pageRows.length - 1];
  return {
    data: pageRows.map(present),
    pagination: {
      limit: req.limit,
      next_cursor: hasMore && last !== undefined ? codec.encode(req.scope, keyOf(last)) : null,
      has_more: hasMore,
    },
  };
}
