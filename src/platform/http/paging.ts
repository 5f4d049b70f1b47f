import type { FastifyRequest } from 'fastify';
import { type TProperties, Type } from 'typebox';
import {
  type CursorCodec,
  type Page,
  PageQuery,
  type PageQueryValues,
  type PageRequest,
  pageRequest,
} from '../cursor';
import { workspaceOf } from './principal';

/** A collection's query string: `limit`, `cursor` and the collection's own filters, nothing else. */
export const pagedQuery = <F extends TProperties>(filters: F = {} as F) =>
  Type.Object({ ...PageQuery, ...filters }, { additionalProperties: false });

/**
 * The page a collection route was asked for. The cursor is bound to the caller's workspace, the
 * collection, the parent resource as written in the path (null for a top-level collection) and the
 * query's filters (platform/cursor.ts).
 */
export function pageOf(
  req: FastifyRequest,
  codec: CursorCodec,
  collection: string,
  parent: string | null = null,
): PageRequest {
  const scope = { collection, workspaceId: workspaceOf(req), parent };
  return pageRequest(codec, scope, req.query as PageQueryValues);
}

/** A page in the success envelope: `{status, data, pagination}`. */
export const paged = <T>(page: Page<T>) => ({ status: 'success' as const, ...page });
