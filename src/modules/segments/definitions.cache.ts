import type { Queryable } from '../../platform/db';
import { type Definition, evaluableQueries } from './definitions';
import type { SegmentQuery } from './query';
import * as repo from './segments.repo';

/**
 * A workspace's segment definitions as evaluation needs them (parsed, and checked to compile), kept
 * in this process between transactions. Each use reads the workspace's definitions version, one
 * row set to a new, never reused value by a trigger in the transaction of every write of a query
 * (migration 0034), and parses again only when it changed. Never reused: definitions read inside a
 * transaction that wrote one and then rolled back are never taken for a later version's. Without it every refresh transaction read and parsed every segment of
 * the workspace: with 500 segments 10–25 ms on PGlite, above the 10 ms a refresh slice may hold the
 * single connection, so no slice could be small enough (docs/segments.md, "Refresh").
 *
 * Read the version before the definitions: a write committed between the two leaves newer
 * definitions under an older version, which the next use reads again, never the reverse.
 */
export interface WorkspaceDefinitions {
  version: string;
  /** Every segment, in saving order (their progress is not here: repo.pendingFull reads it). */
  defs: readonly Definition[];
  /** Parsed queries, for the compiler's reference inlining. Shared: never change it. */
  segments: ReadonlyMap<string, SegmentQuery>;
  /** The segments that parse and compile. */
  usable: ReadonlySet<string>;
  /** Those that do not (the language got stricter, or a reference grew too big). */
  broken: readonly string[];
}

/** Workspaces kept; the one used longest ago is dropped first (a Map keeps insertion order). */
const MAX_WORKSPACES = 1_000;
const cache = new Map<string, WorkspaceDefinitions>();

export async function workspaceDefinitions(q: Queryable, workspaceId: string): Promise<WorkspaceDefinitions> {
  const version = await repo.definitionsVersion(q, workspaceId);
  const hit = cache.get(workspaceId);
  cache.delete(workspaceId);
  if (hit && hit.version === version) {
    cache.set(workspaceId, hit);
    return hit;
  }
  const rows = await repo.listDefinitions(q, workspaceId);
  const defs = rows.map(({ id, query, refs, timed }) => ({ id, query, refs, timed }));
  const loaded = { version, defs, ...evaluableQueries(defs) };
  if (cache.size >= MAX_WORKSPACES) cache.delete(cache.keys().next().value!);
  cache.set(workspaceId, loaded);
  return loaded;
}
