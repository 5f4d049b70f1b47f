import { createHash } from 'node:crypto';
import { type CursorCodec, type Page, type PageRequest, pageRequest, toPage } from '../../platform/cursor';
import { type Db, isStatementTimeout } from '../../platform/db';
import { AppError, notFound } from '../../platform/errors';
import { iso } from '../../platform/http/envelope';
import { createSliceSizer, slicerFor } from '../../platform/slices';
import { findLiveProfileId, getLiveProfiles, liveProfileSliceEnd, type ProfileView } from '../profiles';
import { workspaceDefinitions } from './definitions.cache';
import { BudgetSpent, countMatching, type Match, selectMatching } from './evaluate';
import * as members from './membership.repo';
import type { SegmentQuery } from './query';
import * as repo from './segments.repo';
import { compileOrRefuse, parseOrRefuse, presentSegment, type SegmentView } from './segments.service';

/** Reads: segment lists, members, the change log, and `calculate` (evaluation without saving). */

const afterSeq = (page: PageRequest): number | null => {
  const k = page.after;
  if (k === null) return null;
  if (k.length !== 1 || typeof k[0] !== 'number' || !Number.isSafeInteger(k[0])) {
    throw new AppError('INVALID_CURSOR', 'cursor is not valid for this collection');
  }
  return k[0];
};

export async function listSegments(
  db: Db,
  codec: CursorCodec,
  workspaceId: string,
  page: PageRequest,
  filter: { profile_id?: string | undefined },
): Promise<Page<SegmentView>> {
  let memberOf: string | null = null;
  if (filter.profile_id !== undefined) {
    // A merged-away id lists its survivor's memberships; an unknown one matches nothing.
    memberOf = await findLiveProfileId(db, workspaceId, filter.profile_id);
    if (memberOf === null) return toPage(codec, page, [], () => [], presentSegment);
  }
  const rows = await repo.listSegments(db, workspaceId, memberOf, afterSeq(page), page.limit + 1);
  return toPage(codec, page, rows, (r) => [r.seq], presentSegment);
}

/**
 * Profiles as the API shows them, in the given order, read through the profiles module. One that
 * was erased since its id was read is left out; one merged away meanwhile shows as its survivor.
 */
async function presentProfiles(db: Db, workspaceId: string, ids: readonly string[]): Promise<ProfileView[]> {
  // One statement for the page; a member merged or erased since it was listed is left out.
  return getLiveProfiles(db, workspaceId, ids);
}

async function requireSegment(db: Db, workspaceId: string, id: string): Promise<repo.SegmentRow> {
  const row = await repo.getSegment(db, workspaceId, id);
  if (!row) throw notFound('segment');
  return row;
}

export async function listMembers(
  db: Db,
  codec: CursorCodec,
  workspaceId: string,
  id: string,
  page: PageRequest,
): Promise<Page<ProfileView>> {
  await requireSegment(db, workspaceId, id);
  const rows = await members.listMembers(db, id, afterSeq(page), page.limit + 1);
  const shown = toPage(
    codec,
    page,
    rows,
    (r) => [r.seq],
    (r) => r.profile_id,
  );
  return { data: await presentProfiles(db, workspaceId, shown.data), pagination: shown.pagination };
}

export interface ChangeView {
  profile_id: string;
  change: 'entered' | 'exited';
  at: string;
}

export async function listChanges(
  db: Db,
  codec: CursorCodec,
  workspaceId: string,
  id: string,
  page: PageRequest,
): Promise<Page<ChangeView>> {
  await requireSegment(db, workspaceId, id);
  const rows = await members.listChanges(db, id, afterSeq(page), page.limit + 1);
  return toPage(
    codec,
    page,
    rows,
    (r) => [r.seq],
    (r) => ({ profile_id: r.profile_id, change: r.change, at: iso(r.at)! }),
  );
}

export interface CalculateRequest {
  query: unknown;
  limit?: number | undefined;
  cursor?: string | undefined;
}

export interface CalculateView {
  count: number;
  profiles: ProfileView[];
  pagination: Page<unknown>['pagination'];
}

/**
 * The time a calculation may take, on both engines. On PostgreSQL the server cancels a statement
 * past it (what is left of it, per statement); on PGlite the slices stop once it is spent. Either
 * way the answer is 422 BUDGET_EXCEEDED saying what to do instead, and nothing is held past it.
 */
export const CALCULATE_BUDGET_MS = 10_000;

const budgetExceeded = (budgetMs: number) =>
  new AppError(
    'BUDGET_EXCEEDED',
    `the query needed more than its budget of ${budgetMs / 1000} s (limit: calculate time budget); ` +
      'save it as a segment (its membership is computed in the background and kept current) or narrow it ' +
      '(a shorter time window, an event name, fewer conditions)',
  );

/**
 * POST /tenant/segments/calculate: evaluates a query now, without saving it, within
 * CALCULATE_BUDGET_MS. The cursor is bound to the query (a digest of it), so it cannot page
 * another query's answer.
 */
export async function calculate(
  db: Db,
  codec: CursorCodec,
  workspaceId: string,
  body: CalculateRequest,
  opts: { now?: Date; sliceSize?: number; budgetMs?: number } = {},
): Promise<CalculateView> {
  const query = parseOrRefuse(body.query);
  const digest = createHash('sha256').update(JSON.stringify(query)).digest('base64url');
  const page = pageRequest(
    codec,
    { collection: 'segment-calculate', workspaceId, parent: null },
    { limit: body.limit, cursor: body.cursor, query: digest },
  );
  const after = afterSeq(page) ?? 0;
  const { segments } = await workspaceDefinitions(db, workspaceId);
  compileOrRefuse(query, segments);
  const ctx = { now: opts.now ?? new Date(), segments };
  const budgetMs = opts.budgetMs ?? CALCULATE_BUDGET_MS;
  const deadline = performance.now() + budgetMs;
  let found: { count: number; kept: Match[] };
  try {
    // PostgreSQL: one grouped pass (its other connections keep serving meanwhile, and one pass beats
    // probing slice after slice); PGlite: slices, so ingestion gets a turn between two.
    found =
      db.engine === 'postgres' && opts.sliceSize === undefined
        ? await countMatching(db, workspaceId, query, ctx, { after, limit: page.limit + 1 }, deadline)
        : await inSlices(
            db,
            workspaceId,
            query,
            ctx,
            after,
            page.limit + 1,
            deadline,
            digest,
            opts.sliceSize,
          );
  } catch (err) {
    if (err instanceof BudgetSpent || isStatementTimeout(err)) throw budgetExceeded(budgetMs);
    throw err;
  }
  const shown = toPage(
    codec,
    page,
    found.kept,
    (m) => [m.seq],
    (m) => m.id,
  );
  return {
    count: found.count,
    profiles: await presentProfiles(db, workspaceId, shown.data),
    pagination: shown.pagination,
  };
}

type Ctx = Parameters<typeof selectMatching>[3];

/**
 * What one slice's statements may take on PGlite: the longest an ingest waits behind it. A slice
 * may shrink to one profile (a payload filter over a profile's many events); the floor of 500 it
 * had made the 10 ms unreachable for such queries.
 */
const SLICE_BOUNDS = { targetMs: 10, min: 1, max: 50_000 };

/**
 * The slice size each walk starts from, per workspace and query: where the last walk of the same
 * query ended. A query not walked before starts at 250 profiles, then at most doubles per slice:
 * with a fixed start of 2,000, the first slice of every calculation of a heavy payload filter (each
 * profile's events over years) held the connection for several times the target before the size
 * could adapt.
 */
const CALCULATE_SLICES = createSliceSizer({ ...SLICE_BOUNDS, initial: 250 });

/**
 * PGlite: one connection for everything, so the workspace is walked in slices of profiles by
 * `seq` (evaluate.ts), and ingestion statements get their turn between two slices. The slice size
 * follows the measured time of the last one towards SLICE_BOUNDS.targetMs (at most doubling per step): a
 * cheap trait filter takes a few large slices, an event count smaller ones. Counts stay probed
 * per profile (cost in proportion to the slice, so the sizing converges): a grouped pass per slice
 * rescans the whole window each time, and measured slower on 100k profiles (4.4 s against 2.8 s;
 * docs/decisions.md). A `sliceSize` fixes the size (tests).
 */
async function inSlices(
  db: Db,
  workspaceId: string,
  query: SegmentQuery,
  ctx: Ctx,
  after: number,
  want: number,
  deadline: number,
  /** The query's digest: with the workspace, the key of the slice size remembered between walks. */
  digest: string,
  sliceSize?: number,
): Promise<{ count: number; kept: Match[] }> {
  const slicer = sliceSize === undefined ? slicerFor(CALCULATE_SLICES, `${workspaceId}:${digest}`) : null;
  let size = sliceSize ?? slicer!.size();
  let count = 0;
  const kept: Match[] = [];
  for (let lo = 0; ; ) {
    if (performance.now() > deadline) throw new BudgetSpent();
    // One turn on the connection per slice, timed from inside it: the wait for the turn (behind
    // the event pipeline's batch, lanes taking turns) is not the slice's cost, and counting it made
    // a busy pipeline shrink the slices to one profile each, hundreds of turns for one answer.
    const slice = await db.transaction(
      async (tx) => {
        const t0 = performance.now();
        const upTo = await liveProfileSliceEnd(tx, workspaceId, lo, size);
        const matches = await selectMatching(tx, workspaceId, query, ctx, { after: lo, upTo });
        return { upTo, matches, ms: performance.now() - t0 };
      },
      { interactive: true },
    );
    count += slice.matches.length;
    for (const m of slice.matches) if (m.seq > after && kept.length < want) kept.push(m);
    if (slice.upTo === null) break;
    lo = slice.upTo;
    if (slicer) {
      slicer.record(size, slice.ms);
      size = slicer.size();
    }
  }
  return { count, kept };
}
