import { type Db, preferHashJoins, type Queryable } from '../../platform/db';
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
  if ('ids' in scope && scope.ids.length === 0) return [];
  const { sql, params } = matchingStatement(workspaceId, query, ctx, scope);
  const { rows } = await q.query<Match>(sql, params);
  return rows;
}

/** The statement selectMatching runs (exported for the plan tests). */
export function matchingStatement(
  workspaceId: string,
  query: SegmentQuery,
  ctx: EvalContext,
  scope: Scope,
): { sql: string; params: unknown[] } {
  const byIds = 'ids' in scope;
  const scoped = byIds
    ? 'p.id = ANY($2::uuid[])'
    : 'p.seq > $2::bigint AND ($3::bigint IS NULL OR p.seq <= $3::bigint)';
  const head = byIds ? [workspaceId, scope.ids] : [workspaceId, scope.after, scope.upTo];
  const compiled = compileSegment(query, { ...ctx, firstParam: head.length + 1 });
  return {
    sql: `SELECT p.id, p.seq FROM profiles p ${compiled.joins}
      WHERE p.workspace_id = $1 AND p.merged_into IS NULL AND ${scoped} AND (${compiled.sql})
      ORDER BY p.seq`,
    params: [...head, ...compiled.params],
  };
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
  const bounded = <T>(fn: (q: Queryable, timeoutMs: number) => Promise<T>) => {
    const left = Math.round(deadline - performance.now());
    if (left <= 0) throw new BudgetSpent();
    // The client waits a little longer than the server, so the server's cancel is what ends it.
    return db.transaction((tx) => fn(tx, left + 5_000), { statementTimeoutMs: left });
  };
  const counted = countStatement(workspaceId, query, ctx);
  const { count, estimate } = await bounded(async (tx, timeoutMs) => {
    const [row] = await queryWorkspace<{ n: number; rows: number }>(tx, counted, timeoutMs);
    return { count: row!.n, estimate: row!.rows };
  });
  if (count === 0) return { count, kept: [] };
  const strategy = count / estimate >= 0.01 ? 'correlated' : 'set';
  const paged = pageStatement(workspaceId, query, { ...ctx, strategy }, page);
  const kept = await bounded((tx, timeoutMs) => queryWorkspace<Match>(tx, paged, timeoutMs));
  return { count, kept: kept.map((m) => ({ id: m.id, seq: Number(m.seq) })) };
}

const LIVE = 'p.workspace_id = $1 AND p.merged_into IS NULL';

/**
 * Runs one of countMatching's statements as it is written to run: with nested loops off, so that
 * each grouped pass over the workspace is hashed once and joined to the profiles
 * (platform/db/planner.ts). Per-profile probes are sub-plans, not joins, and keep their index
 * descents. Exported for the plan tests, which must see the plans the service gets.
 */
export async function queryWorkspace<R>(
  tx: Queryable,
  stmt: { sql: string; params: unknown[] },
  timeoutMs?: number,
): Promise<R[]> {
  await preferHashJoins(tx);
  return (await tx.query<R>(stmt.sql, stmt.params, timeoutMs === undefined ? {} : { timeoutMs })).rows;
}

/** countMatching's count: the set form over the whole workspace (exported for the plan tests). */
export function countStatement(workspaceId: string, query: SegmentQuery, ctx: EvalContext) {
  const counted = compileSegment(query, { ...ctx, firstParam: 2, strategy: 'set' });
  return {
    sql: `SELECT count(*)::int AS n,
              (SELECT greatest(reltuples, 1)::float8 FROM pg_class WHERE oid = 'profiles'::regclass) AS rows
         FROM profiles p ${counted.joins} WHERE ${LIVE} AND (${counted.sql})`,
    params: [workspaceId, ...counted.params],
  };
}

/** countMatching's page, in ctx.strategy's form (exported for the plan tests). */
export function pageStatement(
  workspaceId: string,
  query: SegmentQuery,
  ctx: EvalContext,
  page: { after: number; limit: number },
) {
  const paged = compileSegment(query, { ...ctx, firstParam: 4 });
  return {
    sql: `SELECT p.id, p.seq FROM profiles p ${paged.joins} WHERE ${LIVE} AND p.seq > $2 AND (${paged.sql})
            ORDER BY p.seq LIMIT $3`,
    params: [workspaceId, page.after, page.limit, ...paged.params],
  };
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
  if ('ids' in scope && scope.ids.length === 0) return out;
  for (let i = 0; i < segments.length; i += SEGMENTS_PER_STATEMENT) {
    const group = segments.slice(i, i + SEGMENTS_PER_STATEMENT);
    const { sql, params } = manyStatement(workspaceId, group, ctx, scope);
    const { rows } = await q.query<Record<string, unknown>>(sql, params);
    for (const row of rows) {
      group.forEach((s, n) => {
        if (row[`s${n}`] === true) out.get(s.id)!.add(row.id as string);
      });
    }
  }
  return out;
}

/** One statement of selectMatchingMany: a column per segment (exported for the plan tests). */
export function manyStatement(
  workspaceId: string,
  group: ReadonlyArray<{ query: SegmentQuery }>,
  ctx: EvalContext,
  scope: Scope,
): { sql: string; params: unknown[] } {
  const byIds = 'ids' in scope;
  const scoped = byIds
    ? 'p.id = ANY($2::uuid[])'
    : 'p.seq > $2::bigint AND ($3::bigint IS NULL OR p.seq <= $3::bigint)';
  const params: unknown[] = byIds ? [workspaceId, scope.ids] : [workspaceId, scope.after, scope.upTo];
  const columns = group.map((s, n) => {
    // Per profile: a column's grouped pass would need a join of its own.
    const c = compileSegment(s.query, { ...ctx, strategy: 'correlated', firstParam: params.length + 1 });
    params.push(...c.params);
    return `COALESCE((${c.sql}), false) AS s${n}`;
  });
  return {
    sql: `SELECT p.id, ${columns.join(', ')} FROM profiles p
        WHERE p.workspace_id = $1 AND p.merged_into IS NULL AND ${scoped}`,
    params,
  };
}
