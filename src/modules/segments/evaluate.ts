import type { Db, Queryable } from '../../platform/db';
import { compileSegment, type SegmentQuery } from './query';

/**
 * Runs compiled segment queries over profiles. The compiler (./query) answers a boolean expression
 * over the profile alias `p` (it reads profiles, event_profiles, event_properties for payload
 * filters, events only for an event too big for event_properties, and orders: segments only ever
 * read those tables); this shell adds the workspace, the liveness test and the set of profiles to look at:
 * either a list of ids (a refresh of dirty profiles) or a slice of profiles by `seq`.
 *
 * Slices exist because PGlite has one connection: one statement over a whole workspace would hold
 * every ingest and every request until it ends. The size of a refresh's first slice: later ones follow
 * the time the last one took (membership.ts). On PGlite it starts small, since a slice of 2,000
 * profiles for 25 saved payload filters held the connection 0.3 s before the sizer could shrink
 * it; cheap slices double from there. PostgreSQL starts bigger (fewer round trips; its other
 * connections are not blocked anyway).
 */
export const SLICE_SIZE: Record<Db['engine'], number> = { pglite: 100, postgres: 20_000 };

export interface EvalContext {
  now: Date;
  segments: ReadonlyMap<string, SegmentQuery>;
  /** How event counts are written (compile.ts); correlated unless said otherwise. */
  strategy?: 'correlated' | 'set';
}

export type Scope = { ids: readonly string[] } | { after: number; upTo: number | null };

export interface Match {
  id: string;
  seq: number;
}

/** The live profiles of the scope that the query selects, in `seq` order. */
export async function selectMatching(
  q: Queryable,
  workspaceId: string,
  query: SegmentQuery,
  ctx: EvalContext,
  scope: Scope,
): Promise<Match[]> {
  const byIds = 'ids' in scope;
  if (byIds && scope.ids.length === 0) return [];
  const scoped = byIds
    ? 'p.id = ANY($2::uuid[])'
    : 'p.seq > $2::bigint AND ($3::bigint IS NULL OR p.seq <= $3::bigint)';
  const head = byIds ? [workspaceId, scope.ids] : [workspaceId, scope.after, scope.upTo];
  const compiled = compileSegment(query, { ...ctx, firstParam: head.length + 1 });
  const { rows } = await q.query<Match>(
    `SELECT p.id, p.seq FROM profiles p
      WHERE p.workspace_id = $1 AND p.merged_into IS NULL AND ${scoped} AND (${compiled.sql})
      ORDER BY p.seq`,
    [...head, ...compiled.params],
  );
  return rows;
}

/**
 * The whole workspace at once (PostgreSQL's `calculate`): how many live profiles match, and the
 * first `limit` of them after `after` in `seq` order. The count writes event counts as one grouped
 * pass (compile.ts, strategy `set`). The page walks profiles in `seq` order and stops at `limit`
 * matches, probing each one, which is quick while matches are common; when they are rare (under
 * 1% of the table's rows by the planner's estimate) it would walk far, so it too takes the grouped
 * pass. Measured on 1M profiles: docs/decisions.md, "Segments".
 *
 * Each statement runs in a transaction whose statement_timeout is what is left until `deadline`
 * (performance.now() time): the server cancels it there (a 'timeout' error), so a query over its
 * budget frees its connection and the server's CPU at once.
 */
export async function countMatching(
  db: Db,
  workspaceId: string,
  query: SegmentQuery,
  ctx: EvalContext,
  page: { after: number; limit: number },
  deadline: number,
): Promise<{ count: number; kept: Match[] }> {
  const live = 'p.workspace_id = $1 AND p.merged_into IS NULL';
  const bounded = <T>(fn: (q: Queryable, timeoutMs: number) => Promise<T>) => {
    const left = Math.round(deadline - performance.now());
    if (left <= 0) throw new BudgetSpent();
    // The client waits a little longer than the server, so the server's cancel is what ends it.
    return db.transaction((tx) => fn(tx, left + 5_000), { statementTimeoutMs: left });
  };
  const counted = compileSegment(query, { ...ctx, firstParam: 2, strategy: 'set' });
  const { count, estimate } = await bounded(async (tx, timeoutMs) => {
    const { rows } = await tx.query<{ n: number; rows: number }>(
      `SELECT count(*)::int AS n,
              (SELECT greatest(reltuples, 1)::float8 FROM pg_class WHERE oid = 'profiles'::regclass) AS rows
         FROM profiles p WHERE ${live} AND (${counted.sql})`,
      [workspaceId, ...counted.params],
      { timeoutMs },
    );
    return { count: rows[0]!.n, estimate: rows[0]!.rows };
  });
  if (count === 0) return { count, kept: [] };
  const strategy = count / estimate >= 0.01 ? 'correlated' : 'set';
  const paged = compileSegment(query, { ...ctx, firstParam: 4, strategy });
  const kept = await bounded(
    async (tx, timeoutMs) =>
      (
        await tx.query<Match>(
          `SELECT p.id, p.seq FROM profiles p WHERE ${live} AND p.seq > $2 AND (${paged.sql})
            ORDER BY p.seq LIMIT $3`,
          [workspaceId, page.after, page.limit, ...paged.params],
          { timeoutMs },
        )
      ).rows,
  );
  return { count, kept: kept.map((m) => ({ id: m.id, seq: Number(m.seq) })) };
}

/** A calculation's time budget ran out before its next statement (or slice) started. */
export class BudgetSpent extends Error {
  override readonly name = 'BudgetSpent';
}

/** Segments evaluated by one statement (one column each). */
export const SEGMENTS_PER_STATEMENT = 25;

/**
 * For each of the given segments, the live profiles of the scope it selects: one statement per
 * SEGMENTS_PER_STATEMENT segments, each segment's expression a boolean column, so a refresh of a
 * workspace with many segments reads each profile once per statement, not once per segment.
 */
export async function selectMatchingMany(
  q: Queryable,
  workspaceId: string,
  segments: ReadonlyArray<{ id: string; query: SegmentQuery }>,
  ctx: EvalContext,
  scope: Scope,
): Promise<Map<string, Set<string>>> {
  const out = new Map(segments.map((s) => [s.id, new Set<string>()]));
  const byIds = 'ids' in scope;
  if (byIds && scope.ids.length === 0) return out;
  const scoped = byIds
    ? 'p.id = ANY($2::uuid[])'
    : 'p.seq > $2::bigint AND ($3::bigint IS NULL OR p.seq <= $3::bigint)';
  for (let i = 0; i < segments.length; i += SEGMENTS_PER_STATEMENT) {
    const group = segments.slice(i, i + SEGMENTS_PER_STATEMENT);
    const params: unknown[] = byIds ? [workspaceId, scope.ids] : [workspaceId, scope.after, scope.upTo];
    const columns = group.map((s, n) => {
      const c = compileSegment(s.query, { ...ctx, firstParam: params.length + 1 });
      params.push(...c.params);
      return `COALESCE((${c.sql}), false) AS s${n}`;
    });
    const { rows } = await q.query<Record<string, unknown>>(
      `SELECT p.id, ${columns.join(', ')} FROM profiles p
        WHERE p.workspace_id = $1 AND p.merged_into IS NULL AND ${scoped}`,
      params,
    );
    for (const row of rows) {
      group.forEach((s, n) => {
        if (row[`s${n}`] === true) out.get(s.id)!.add(row.id as string);
      });
    }
  }
  return out;
}
