import type { Db, Queryable } from '../../platform/db';
import { AppError, notFound } from '../../platform/errors';
import { iso } from '../../platform/http/envelope';
import { newSortableId } from '../../platform/ids';
import { dependentsOf, hasRelativeWindow } from './definitions';
import { workspaceDefinitions } from './definitions.cache';
import {
  compileSegment,
  findSegmentCycle,
  isSegmentExpandError,
  parseSegmentQuery,
  type SegmentQuery,
  segmentReferences,
} from './query';
import { enqueueRefresh } from './refresh.job';
import * as repo from './segments.repo';
import { SEGMENTS_PER_WORKSPACE } from './segments.schemas';

/** Saved segment definitions: create, read, change, delete. Membership lives in ./membership.ts. */

export interface SegmentView {
  id: string;
  name: string;
  description: string | null;
  query: unknown;
  member_count: number;
  membership_status: 'current' | 'computing';
  created_at: string;
  updated_at: string;
}

export const presentSegment = (r: repo.SegmentRow): SegmentView => ({
  id: r.id,
  name: r.name,
  description: r.description,
  query: r.query,
  member_count: r.member_count,
  membership_status: r.full_after_seq === null ? 'current' : 'computing',
  created_at: iso(r.created_at)!,
  updated_at: iso(r.updated_at)!,
});

/** A parsed query, or 400 with each faulty node's JSON pointer under `/query`. */
export function parseOrRefuse(input: unknown): SegmentQuery {
  const parsed = parseSegmentQuery(input);
  if (parsed.ok) return parsed.query;
  throw new AppError('VALIDATION_ERROR', 'the segment query is not valid', {
    details: parsed.errors.map((e) => ({ path: `/query${e.path}`, message: e.message })),
  });
}

const refused = (message: string) =>
  new AppError('VALIDATION_ERROR', message, { details: [{ path: '/query', message }] });

/**
 * A compile error of the query language (a reference it cannot inline: unknown, cyclic, or too
 * big once inlined) becomes a 400; anything else is a bug and stays a 500.
 */
export function compileOrRefuse(
  query: SegmentQuery,
  segments: ReadonlyMap<string, SegmentQuery>,
  context = '',
): void {
  try {
    compileSegment(query, { now: new Date(), segments, firstParam: 1 });
  } catch (err) {
    if (isSegmentExpandError(err)) throw refused(`${context}${err.message}`);
    throw err;
  }
}

interface CheckedQuery {
  query: unknown;
  refs: string[];
  timed: boolean;
}

/**
 * Checks a query about to be saved as segment `id`, under the workspace's segment lock: it parses,
 * every segment it refers to exists, and no cycle of references results.
 */
async function checkQuery(
  tx: Queryable,
  workspaceId: string,
  id: string,
  input: unknown,
): Promise<CheckedQuery> {
  const query = parseOrRefuse(input);
  const refs = segmentReferences(query);
  const { defs, segments: saved } = await workspaceDefinitions(tx, workspaceId);
  const known = new Set(defs.map((d) => d.id));
  const unknown = refs.filter((r) => r !== id && !known.has(r));
  if (unknown.length > 0) throw refused(`refers to unknown segment ${unknown.join(', ')}`);
  const deps = new Map<string, readonly string[]>(defs.map((d) => [d.id, d.refs]));
  deps.set(id, refs);
  const cycle = findSegmentCycle(id, deps);
  if (cycle) throw refused(`segments would refer to each other in a cycle: ${cycle.join(' → ')}`);
  const segments = new Map(saved);
  segments.set(id, query);
  compileOrRefuse(query, segments);
  // The segments that inline this one must still compile with its new query.
  for (const dep of dependentsOf(defs, [id])) {
    const q = segments.get(dep);
    if (q) compileOrRefuse(q, segments, `segment ${dep} refers to this one: `);
  }
  return { query, refs, timed: hasRelativeWindow(query) };
}

export interface CreateSegment {
  name: string;
  description?: string | null | undefined;
  query: unknown;
}

export async function createSegment(db: Db, workspaceId: string, body: CreateSegment): Promise<SegmentView> {
  const id = newSortableId('seg');
  const row = await db.transaction(async (tx) => {
    await repo.lockWorkspaceSegments(tx, workspaceId);
    // The cheap refusal first: a workspace at its cap must not make every refused save parse and
    // compile all its segments (a loop of them held PGlite's connection for 100 ms each).
    if ((await repo.countSegments(tx, workspaceId)) >= SEGMENTS_PER_WORKSPACE) {
      throw new AppError('CONFLICT', `a workspace holds at most ${SEGMENTS_PER_WORKSPACE} segments`);
    }
    const checked = await checkQuery(tx, workspaceId, id, body.query);
    await repo.insertSegment(tx, {
      id,
      workspaceId,
      name: body.name,
      description: body.description ?? null,
      ...checked,
    });
    // Its full evaluation starts now (full_after_seq = 0); profiles changing meanwhile are marked
    // dirty from this commit on, since the workspace now has a segment.
    await enqueueRefresh(tx, workspaceId);
    return repo.getSegment(tx, workspaceId, id);
  });
  return presentSegment(row!);
}

export async function getSegment(db: Queryable, workspaceId: string, id: string): Promise<SegmentView> {
  const row = await repo.getSegment(db, workspaceId, id);
  if (!row) throw notFound('segment');
  return presentSegment(row);
}

export interface PatchSegment {
  name?: string | undefined;
  description?: string | null | undefined;
  query?: unknown;
}

/**
 * Changes a segment. A new query restarts the full evaluation of this segment and of every
 * segment that refers to it, directly or not (they inline its query).
 */
export async function updateSegment(
  db: Db,
  workspaceId: string,
  id: string,
  patch: PatchSegment,
): Promise<SegmentView> {
  const row = await db.transaction(async (tx) => {
    await repo.lockWorkspaceSegments(tx, workspaceId);
    if (!(await repo.getSegment(tx, workspaceId, id))) throw notFound('segment');
    const checked = 'query' in patch ? await checkQuery(tx, workspaceId, id, patch.query) : undefined;
    await repo.updateSegment(tx, workspaceId, id, {
      name: patch.name,
      description: patch.description,
      query: checked,
    });
    if (checked) {
      // Read again: this transaction's own write bumped the version, so these are the new ones.
      const dependents = dependentsOf((await workspaceDefinitions(tx, workspaceId)).defs, [id]);
      await repo.startFull(tx, workspaceId, [id, ...dependents], true);
      await enqueueRefresh(tx, workspaceId);
    }
    return repo.getSegment(tx, workspaceId, id);
  });
  return presentSegment(row!);
}

/**
 * Deletes a segment with its membership and change log. Refused (409) while another segment
 * refers to it. No exits are recorded: the segment itself is gone.
 */
export async function deleteSegment(db: Db, workspaceId: string, id: string): Promise<void> {
  await db.transaction(async (tx) => {
    await repo.lockWorkspaceSegments(tx, workspaceId);
    if (!(await repo.getSegment(tx, workspaceId, id))) throw notFound('segment');
    const referrers = await repo.listReferrers(tx, workspaceId, id);
    if (referrers.length > 0) {
      throw new AppError(
        'CONFLICT',
        `segment ${id} is referred to by ${referrers.join(', ')}; change those first`,
      );
    }
    await repo.deleteSegment(tx, workspaceId, id);
  });
}
