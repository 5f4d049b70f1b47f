import { SEGMENT_LIMITS as L, type SegmentQuery } from './types';

/**
 * Segment references: `{"segment": id}` is answered by inlining the saved segment's query, so
 * `calculate` is always exact (never a stale membership table). Inlining needs the reference graph
 * to be acyclic and the expanded tree to stay bounded; both are checked here, purely.
 */

export type SegmentExpandErrorCode = 'unknown_segment' | 'segment_cycle' | 'expanded_too_large';

export interface SegmentExpandError extends Error {
  code: SegmentExpandErrorCode;
  /** The unknown id, or the ids of the cycle (first = last). */
  segments: string[];
}

function expandError(code: SegmentExpandErrorCode, message: string, segments: string[]): SegmentExpandError {
  return Object.assign(new Error(message), { name: 'SegmentExpandError', code, segments });
}

export function isSegmentExpandError(e: unknown): e is SegmentExpandError {
  return e instanceof Error && e.name === 'SegmentExpandError';
}

/** Ids this query refers to directly, each once, in order of appearance. */
export function segmentReferences(query: SegmentQuery): string[] {
  const ids = new Set<string>();
  const walk = (q: SegmentQuery): void => {
    if ('and' in q) q.and.forEach(walk);
    else if ('or' in q) q.or.forEach(walk);
    else if ('not' in q) walk(q.not);
    else if ('segment' in q) ids.add(q.segment);
  };
  walk(query);
  return [...ids];
}

/**
 * A cycle reachable from rootId in the dependency map (id → ids it refers to), as the path around
 * it with the first id repeated at the end (["a", "b", "a"]); null if there is none. Ids missing
 * from the map refer to nothing.
 */
export function findSegmentCycle(
  rootId: string,
  deps: ReadonlyMap<string, readonly string[]>,
): string[] | null {
  const done = new Set<string>();
  const stack: string[] = [];
  const visit = (id: string): string[] | null => {
    const at = stack.indexOf(id);
    if (at >= 0) return [...stack.slice(at), id];
    if (done.has(id)) return null;
    stack.push(id);
    for (const next of deps.get(id) ?? []) {
      const cycle = visit(next);
      if (cycle) return cycle;
    }
    stack.pop();
    done.add(id);
    return null;
  };
  return visit(rootId);
}

/**
 * The query with every segment reference replaced by the referenced query (transitively). Throws a
 * SegmentExpandError for an unknown id, a cycle, or an expansion beyond SEGMENT_LIMITS.expanded*
 * (a diamond of references could otherwise grow exponentially; counting as we go stops it early).
 */
export function expandSegments(
  query: SegmentQuery,
  segments: ReadonlyMap<string, SegmentQuery>,
): SegmentQuery {
  let conditions = 0;
  const count = (n: number) => {
    conditions += n;
    if (conditions > L.expandedConditions) {
      throw expandError(
        'expanded_too_large',
        `with referenced segments inlined the query has more than ${L.expandedConditions} conditions`,
        [],
      );
    }
  };
  const expand = (q: SegmentQuery, depth: number, via: string[]): SegmentQuery => {
    if (depth > L.expandedDepth) {
      throw expandError(
        'expanded_too_large',
        `with referenced segments inlined the query nests deeper than ${L.expandedDepth} levels`,
        [],
      );
    }
    if ('and' in q) return { and: q.and.map((c) => expand(c, depth + 1, via)) };
    if ('or' in q) return { or: q.or.map((c) => expand(c, depth + 1, via)) };
    if ('not' in q) return { not: expand(q.not, depth + 1, via) };
    if ('segment' in q) {
      const id = q.segment;
      if (via.includes(id)) {
        const cycle = [...via.slice(via.indexOf(id)), id];
        throw expandError(
          'segment_cycle',
          `segments refer to each other in a cycle: ${cycle.join(' → ')}`,
          cycle,
        );
      }
      const target = segments.get(id);
      if (!target) throw expandError('unknown_segment', `unknown segment ${id}`, [id]);
      // The reference takes the referenced root's place: same depth.
      return expand(target, depth, [...via, id]);
    }
    count(1 + ('event' in q ? (q.event.where?.length ?? 0) : 0));
    return q;
  };
  return expand(query, 1, []);
}
