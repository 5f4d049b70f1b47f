import { compileSegment, isSegmentExpandError, parseSegmentQuery, type SegmentQuery } from './query';

/**
 * Pure helpers over a workspace's saved segments: which ones depend on time, which ones depend on
 * a given segment, and the parsed queries the compiler inlines references from.
 */

export interface Definition {
  id: string;
  query: unknown;
  refs: readonly string[];
  timed: boolean;
}

/**
 * Whether a query's answer changes as time passes with no new data: only relative windows
 * (`within_days`) do; `from` / `to` are fixed instants. Referenced segments are not looked into
 * here (see `timedClosure`), so a change of one of them needs no rewrite of this flag.
 */
export function hasRelativeWindow(query: unknown): boolean {
  if (Array.isArray(query)) return query.some(hasRelativeWindow);
  if (typeof query !== 'object' || query === null) return false;
  return Object.entries(query).some(([k, v]) => k === 'within_days' || hasRelativeWindow(v));
}

/** The ids that refer, directly or through others, to any of `ids` (the ids themselves excluded). */
export function dependentsOf(defs: readonly Definition[], ids: readonly string[]): string[] {
  const found = new Set<string>();
  const start = new Set(ids);
  let frontier = [...ids];
  while (frontier.length > 0) {
    const next: string[] = [];
    for (const d of defs) {
      if (found.has(d.id) || start.has(d.id)) continue;
      if (d.refs.some((r) => frontier.includes(r))) {
        found.add(d.id);
        next.push(d.id);
      }
    }
    frontier = next;
  }
  return [...found];
}

/** Segments whose membership ages: timed themselves, or referring to one that is. */
export function timedClosure(defs: readonly Definition[]): string[] {
  const timed = defs.filter((d) => d.timed).map((d) => d.id);
  return [...timed, ...dependentsOf(defs, timed)];
}

/**
 * The parsed queries of the workspace, for the compiler's reference inlining. A stored query the
 * parser refuses (the language got stricter since it was saved) is left out and reported, so one
 * such segment cannot stop the others from being refreshed.
 */
export function parsedQueries(defs: readonly Definition[]): {
  segments: Map<string, SegmentQuery>;
  broken: string[];
} {
  const segments = new Map<string, SegmentQuery>();
  const broken: string[] = [];
  for (const d of defs) {
    const parsed = parseSegmentQuery(d.query);
    if (parsed.ok) segments.set(d.id, parsed.query);
    else broken.push(d.id);
  }
  return { segments, broken };
}

/**
 * parsedQueries, minus the segments the compiler cannot inline (a reference grown too big by a
 * later change elsewhere): those are reported and skipped by a refresh instead of failing it for
 * every segment of the workspace.
 */
export function evaluableQueries(defs: readonly Definition[]): {
  segments: Map<string, SegmentQuery>;
  usable: Set<string>;
  broken: string[];
} {
  const { segments, broken } = parsedQueries(defs);
  const usable = new Set<string>();
  for (const [id, q] of segments) {
    try {
      compileSegment(q, { now: new Date(), segments, firstParam: 1 });
      usable.add(id);
    } catch (err) {
      if (!isSegmentExpandError(err)) throw err;
      broken.push(id);
    }
  }
  return { segments, usable, broken };
}
