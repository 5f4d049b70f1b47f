import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { Type } from 'typebox';
import { AppError } from './errors';

/**
 * Opaque, tamper-evident keyset cursors. The cursor is the last row's sort key, sealed with
 * AES-256-GCM: clients cannot read it (no internal ids leak), cannot forge or alter it (the tag
 * fails), and a cursor of one collection is refused by another (the collection name is bound in as
 * associated data). Every process sharing a database shares the key (see system_settings).
 */
export interface CursorCodec {
  encode(collection: string, key: readonly unknown[]): string;
  decode(collection: string, cursor: string): unknown[];
}

export function createCursorCodec(secret: string): CursorCodec {
  const key = createHash('sha256').update(`cursor:${secret}`).digest();
  return {
    encode(collection, keyValues) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(Buffer.from(collection));
      const body = Buffer.concat([cipher.update(JSON.stringify(keyValues), 'utf8'), cipher.final()]);
      return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
    },
    decode(collection, cursor) {
      const invalid = () => new AppError('INVALID_CURSOR', 'cursor is not valid for this collection');
      if (!/^[A-Za-z0-9_-]{30,1000}$/.test(cursor)) throw invalid();
      const raw = Buffer.from(cursor, 'base64url');
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
        decipher.setAAD(Buffer.from(collection));
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
}

export interface Page<T> {
  data: T[];
  pagination: { limit: number; next_cursor: string | null; has_more: boolean };
}

export function pageRequest(
  codec: CursorCodec,
  collection: string,
  q: { limit?: number | undefined; cursor?: string | undefined },
): PageRequest {
  const limit = q.limit ?? DEFAULT_PAGE_LIMIT;
  return { limit, after: q.cursor ? codec.decode(collection, q.cursor) : null };
}

/**
 * Builds a page from rows fetched with `LIMIT limit + 1`: the extra row only tells whether another
 * page exists. `keyOf` returns the keyset of a row (the ORDER BY columns, in order).
 */
export function toPage<Row, T>(
  codec: CursorCodec,
  collection: string,
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
      next_cursor: hasMore && last !== undefined ? codec.encode(collection, keyOf(last)) : null,
      has_more: hasMore,
    },
  };
}
