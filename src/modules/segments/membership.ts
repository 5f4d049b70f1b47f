import type { Logger } from 'pino';
import type { Db, Queryable } from '../../platform/db';
import { createSliceSizer, type SliceSizer } from '../../platform/slices';
import { type OutboxType, writeOutboxMany } from '../outbox';
import { getProfileSummaries, liveProfileSliceEnd } from '../profiles';
import type { Definition } from './definitions';
import { workspaceDefinitions } from './definitions.cache';
import {
  type EvalContext,
  type Scope,
  SEGMENTS_PER_STATEMENT,
  SLICE_SIZE,
  selectMatchingMany,
} from './evaluate';
import * as members from './membership.repo';
import type { SegmentQuery } from './query';
import * as repo from './segments.repo';

/**
 * Keeps saved segments' membership current. Two kinds of work, each done in small transactions
 * that hold the workspace's segment lock (so changes are decided one refresh at a time and their
 * log is in decision order):
 * - dirty profiles (marked by the pipeline and the API merge): every segment of the workspace is
 *   evaluated for exactly those ids;
 * - full evaluations (a segment saved, its query or a query it refers to changed, a time window
 *   moved on): one slice of profiles by `seq` per transaction, the position kept in the segment.
 * Every entry and exit is applied, logged in segment_changes and written to the outbox
 * (`segment.entered` / `segment.exited`, data `{segment_id, profile_id}`) in that transaction.
 */

/**
 * Each transaction of a refresh costs about a target time whatever the queries: its dirty profiles
 * and its slice of a full evaluation are sized by the time the workspace's last ones took
 * (platform/slices.ts). PGlite: 10 ms, the longest an ingest waits behind one (its single
 * connection); PostgreSQL: 100 ms, which keeps a refresh's connection and the job runner's slot
 * turning over (the analytics lane is shared by every workspace).
 */
export const REFRESH_SLICE_TARGET_MS: Record<Db['engine'], number> = { pglite: 10, postgres: 100 };
const dirtySizer = {
  pglite: createSliceSizer({ targetMs: REFRESH_SLICE_TARGET_MS.pglite, min: 1, max: 500, initial: 100 }),
  postgres: createSliceSizer({ targetMs: REFRESH_SLICE_TARGET_MS.postgres, min: 1, max: 500, initial: 500 }),
};
const fullSizer = {
  pglite: createSliceSizer({
    targetMs: REFRESH_SLICE_TARGET_MS.pglite,
    min: 1,
    max: 50_000,
    initial: SLICE_SIZE.pglite,
  }),
  postgres: createSliceSizer({
    targetMs: REFRESH_SLICE_TARGET_MS.postgres,
    min: 1,
    max: 200_000,
    initial: SLICE_SIZE.postgres,
  }),
};

/**
 * Dirty profiles taken per transaction: what the time sizer says, and never more than 20,000
 * profile × segment pairs, so a workspace with many segments takes fewer.
 */
const dirtyChunk = (sized: number, segments: number) =>
  Math.max(1, Math.min(sized, Math.floor(20_000 / Math.max(1, segments))));

export interface RefreshOptions {
  log: Logger;
  /** The clock time windows are measured against (tests move it on). */
  now?: () => Date;
  signal?: AbortSignal;
  /** Fixed sizes instead of the time-sized ones (tests). */
  sliceSize?: number;
  dirtyChunk?: number;
}

/**
 * Refreshes one workspace until nothing is left to do (or `budgetMs` has passed): alternately a
 * chunk of dirty profiles and a slice of a full evaluation, so live updates never wait for a whole
 * workspace to be scanned.
 */
export async function refreshWorkspace(
  db: Db,
  workspaceId: string,
  opts: RefreshOptions & { budgetMs?: number },
): Promise<{ changes: number; done: boolean; worked: boolean }> {
  let changes = 0;
  let worked = false;
  const deadline = Date.now() + (opts.budgetMs ?? Number.POSITIVE_INFINITY);
  for (;;) {
    opts.signal?.throwIfAborted();
    const dirty = await timed(dirtySizer[db.engine], workspaceId, opts.dirtyChunk, (size) =>
      db.transaction((tx) => refreshDirty(tx, workspaceId, opts, size)),
    );
    opts.signal?.throwIfAborted();
    const full = await timed(fullSizer[db.engine], workspaceId, opts.sliceSize, (size) =>
      db.transaction((tx) => refreshSlice(tx, workspaceId, opts, size)),
    );
    changes += dirty.changes + full.changes;
    if (dirty.profiles === 0 && !full.worked) return { changes, done: true, worked };
    worked = true;
    // Out of time while ingestion keeps marking profiles: the caller hands the rest to a new job.
    if (Date.now() > deadline) return { changes, done: false, worked };
  }
}

/**
 * Runs one sized unit of work and tells the sizer how long it took, unless the size was fixed by
 * the caller (tests) or the unit did nothing.
 */
async function timed<T extends { sized: number }>(
  sizer: SliceSizer,
  workspaceId: string,
  fixed: number | undefined,
  run: (size: number) => Promise<T>,
): Promise<T> {
  const size = fixed ?? sizer.size(workspaceId);
  const t0 = performance.now();
  const r = await run(size);
  if (fixed === undefined && r.sized > 0) sizer.record(workspaceId, r.sized, performance.now() - t0);
  return r;
}

interface Loaded {
  /** The segments that can be evaluated. */
  defs: readonly Definition[];
  ctx: EvalContext;
  broken: readonly string[];
}

async function load(tx: Queryable, workspaceId: string, opts: RefreshOptions): Promise<Loaded> {
  await repo.lockWorkspaceSegments(tx, workspaceId);
  const { defs, segments, usable, broken } = await workspaceDefinitions(tx, workspaceId);
  if (broken.length > 0) {
    opts.log.error(
      { workspace_id: workspaceId, segments: broken },
      'segments: stored query no longer parses or compiles; its membership is left as it is',
    );
  }
  const ctx = { now: opts.now?.() ?? new Date(), segments };
  return { defs: defs.filter((d) => usable.has(d.id)), ctx, broken };
}

async function refreshDirty(
  tx: Queryable,
  workspaceId: string,
  opts: RefreshOptions,
  size: number,
): Promise<{ profiles: number; changes: number; sized: number }> {
  const { defs, ctx } = await load(tx, workspaceId, opts);
  const want = dirtyChunk(size, defs.length);
  const ids = await members.takeDirty(tx, workspaceId, want);
  // Only a full chunk says how long a chunk of this size takes.
  const sized = ids.length === want ? want : 0;
  if (ids.length === 0 || defs.length === 0) return { profiles: ids.length, changes: 0, sized: 0 };
  const current = await members.membersAmong(
    tx,
    defs.map((d) => d.id),
    ids,
  );
  const selected = await selectMatchingMany(
    tx,
    workspaceId,
    defs.map((d) => ({ id: d.id, query: query(ctx, d.id) })),
    ctx,
    { ids },
  );
  const changes: members.Change[] = [];
  for (const d of defs) {
    const now = new Set(current.filter((m) => m.segment_id === d.id).map((m) => m.profile_id));
    changes.push(...diff(d.id, selected.get(d.id)!, now));
  }
  await record(tx, workspaceId, changes, ctx.now);
  return { profiles: ids.length, changes: changes.length, sized };
}

async function refreshSlice(
  tx: Queryable,
  workspaceId: string,
  opts: RefreshOptions,
  size: number,
): Promise<{ worked: boolean; changes: number; sized: number }> {
  const { defs, ctx, broken } = await load(tx, workspaceId, opts);
  // A segment that cannot be evaluated would keep its evaluation pending (and "computing") forever.
  await repo.abandonFull(tx, broken);
  const evaluable = new Set(defs.map((d) => d.id));
  const pending = (await repo.pendingFull(tx, workspaceId)).filter((x) => evaluable.has(x.id));
  if (pending.length === 0) return { worked: false, changes: 0, sized: 0 };
  // The segments furthest behind, together: those restarted at once (a save of several, the
  // time-window schedule) then walk the profiles together, one read of each slice for all.
  const after = Math.min(...pending.map((x) => x.full_after_seq));
  const group = pending.filter((x) => x.full_after_seq === after).slice(0, SEGMENTS_PER_STATEMENT);
  const upTo = await liveProfileSliceEnd(tx, workspaceId, after, size);
  const scope: Scope = { after, upTo };
  const ids = group.map((d) => d.id);
  const selected = await selectMatchingMany(
    tx,
    workspaceId,
    group.map((d) => ({ id: d.id, query: query(ctx, d.id) })),
    ctx,
    scope,
  );
  const current = await members.membersInRange(tx, workspaceId, ids, after, upTo);
  const changes: members.Change[] = [];
  for (const id of ids) {
    const now = new Set(current.filter((m) => m.segment_id === id).map((m) => m.profile_id));
    changes.push(...diff(id, selected.get(id)!, now));
  }
  await record(tx, workspaceId, changes, ctx.now);
  for (const id of ids) await repo.setFullProgress(tx, id, upTo, after);
  // The last slice of a walk is short: it says nothing about the time of a full one.
  return { worked: true, changes: changes.length, sized: upTo === null ? 0 : size };
}

const query = (ctx: EvalContext, id: string): SegmentQuery => ctx.segments.get(id)!;

function diff(segmentId: string, selected: ReadonlySet<string>, now: Set<string>): members.Change[] {
  const out: members.Change[] = [];
  for (const id of selected) if (!now.has(id)) out.push({ segmentId, profileId: id, change: 'entered' });
  for (const id of now) if (!selected.has(id)) out.push({ segmentId, profileId: id, change: 'exited' });
  return out;
}

const ENTERED: OutboxType = 'segment.entered';
const EXITED: OutboxType = 'segment.exited';

async function record(
  tx: Queryable,
  workspaceId: string,
  changes: members.Change[],
  at: Date,
): Promise<void> {
  if (changes.length === 0) return;
  await members.applyChanges(tx, changes, at);
  // Each fact names its segment and says who the profile is (a merged-away one: its survivor).
  const names = await repo.segmentNames(
    tx,
    changes.map((c) => c.segmentId),
  );
  const who = await getProfileSummaries(
    tx,
    workspaceId,
    changes.map((c) => c.profileId),
  );
  await writeOutboxMany(
    tx,
    changes.map((c) => ({
      workspaceId,
      type: c.change === 'entered' ? ENTERED : EXITED,
      data: {
        segment_id: c.segmentId,
        segment_name: names.get(c.segmentId) ?? null,
        profile_id: c.profileId,
        profile: who.get(c.profileId) ?? null,
      },
    })),
  );
}
