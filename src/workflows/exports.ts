import { setTimeout as sleep } from 'node:timers/promises';
import * as commerce from '../modules/commerce';
import * as ingest from '../modules/ingest';
import * as profiles from '../modules/profiles';
import * as segments from '../modules/segments';
import type { Db } from '../platform/db';
import {
  csvHeader,
  type ExportField,
  type ExportFormat,
  type ExportKey,
  type ExportPage,
  type ExportWindow,
} from '../platform/db/export-lines';
import { AppError, validationError } from '../platform/errors';
import { isUuid, sortableIdTime } from '../platform/ids';
import { nextSliceSize } from '../platform/slices';

/**
 * Workspace exports (GET /tenant/exports/…, docs/api.md "Workspace exports"): every record of a kind
 * in a stable order, as finished NDJSON lines or CSV records, read in keyset pages, each page one
 * short statement of its own (the connection is free between two), sized by the time the last one
 * took and by its bytes, so memory stays constant whatever the workspace holds. `after` (the id of
 * the last record a client has) resumes right after that record: no duplicate, no gap.
 *
 * | kind            | order (and `since` / `until` filter)                    | record                         |
 * |-----------------|---------------------------------------------------------|--------------------------------|
 * | events          | received_at, then seq (arrival)                         | the event + message_id, profile_id |
 * | profiles        | created_at, then seq (live profiles only)               | GET /tenant/profiles/{id}      |
 * | orders          | occurred_at, then seq (when they happened)              | GET /tenant/orders             |
 * | segment members | when they entered (the membership's seq; filter entered_at) | GET /tenant/profiles/{id}  |
 */

export const EXPORT_KINDS = ['events', 'profiles', 'orders', 'segment-members'] as const;
export type ExportKind = (typeof EXPORT_KINDS)[number];

export interface ExportRequest {
  workspaceId: string;
  kind: ExportKind;
  /** The segment of `segment-members`. */
  segmentId: string | null;
  format: ExportFormat;
  window: ExportWindow;
  /** The id of the last record the client has: the export goes on right after it. */
  after: string | null;
}

/**
 * How pages are sized on each engine: a page takes about `targetMs` and at most `bytes` of lines.
 * While the API has served requests in the last second (PGlite only: there, and only there, the
 * foreground lane is the API's), about `busyTargetMs` and `busyBytes`, and the next page waits
 * `busyPause` times as long as the last one took.
 */
export interface PageBounds {
  targetMs: number;
  bytes: number;
  busyTargetMs: number;
  busyBytes: number;
  busyPause: number;
  min: number;
  max: number;
  initial: number;
}

/**
 * PGlite: a request of any workspace that arrives during a page waits for the rest of it on the one
 * connection, so while requests are being served (the last second) a page takes about 3 ms, and a
 * neighbour's request waits about that much more; then an export also takes at most half of the
 * time (it pauses as long as each page took), because building its lines is CPU the requests need
 * too, and its pages stay under 96 KiB (strings V8 allocates young; a larger one waits for a full
 * collection). Alone, 20 ms pages read faster (each page costs a fixed part besides its rows).
 * PostgreSQL: pages run on the analytics lane's own pool, never in a request's way; 50 ms pages
 * mean few round trips. The first page is small whatever the rows hold (50 profiles of the largest
 * attributes allowed are 13 MB); pages then at most double.
 */
export const EXPORT_PAGES: Record<Db['engine'], PageBounds> = {
  pglite: {
    targetMs: 20,
    bytes: 1 << 20,
    busyTargetMs: 3,
    busyBytes: 96 << 10,
    busyPause: 1,
    min: 1,
    max: 4_000,
    initial: 50,
  },
  postgres: {
    targetMs: 50,
    bytes: 1 << 20,
    busyTargetMs: 50,
    busyBytes: 1 << 20,
    busyPause: 0,
    min: 1,
    max: 5_000,
    initial: 50,
  },
};

/** Requests served within this long make the API busy (as the processing loop sees it). */
const BUSY_WITHIN_MS = 1_000;

/**
 * Whether the API has served requests lately: on PGlite only, where the foreground lane is the
 * API's alone (on PostgreSQL background work of the process uses it too, and a page never waits
 * for a request's connection).
 */
const busy = (db: Db): boolean =>
  db.engine === 'pglite' && performance.now() - db.foregroundSeenAt() < BUSY_WITHIN_MS;

/** The bounds of the next page: smaller while the API serves requests. */
const boundsNow = (db: Db, b: PageBounds): PageBounds =>
  busy(db) ? { ...b, targetMs: b.busyTargetMs, bytes: b.busyBytes } : b;

/**
 * The next page's size: towards the time target (slices.ts), and no more rows than fit the byte
 * budget at the last page's bytes per row read.
 */
export function nextPageSize(size: number, elapsedMs: number, bytes: number, read: number, b: PageBounds) {
  const byTime = nextSliceSize(size, elapsedMs, b);
  if (read === 0 || bytes === 0) return byTime;
  return Math.max(b.min, Math.min(byTime, Math.floor((b.bytes * read) / bytes)));
}

/** A walk over one kind: its fields, where `after` stands, and its pages. */
interface Walk<K> {
  fields: readonly ExportField[];
  /** The key to read on from: null from the start; 400 for an id of the wrong shape, 404 for none. */
  start(db: Db, r: ExportRequest): Promise<K | null>;
  page(db: Db, r: ExportRequest, after: K | null, limit: number): Promise<ExportPage<K>>;
}

/** `after` names no record of this export: unknown, another workspace's, or gone since (erased, left). */
const afterNotFound = (noun: string, id: string) => {
  const message =
    `no ${noun} ${JSON.stringify(id.slice(0, 200))} in this export: unknown, or removed since it was exported ` +
    '(erased, or no longer a member); resume after an earlier record, or start again';
  return new AppError('NOT_FOUND', message, { details: [{ path: '/after', message }] });
};

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * How far from the time in an event's id its receipt time is looked for first. The id is made just
 * after the receipt time is taken, in the same request; a second either way covers a clock step.
 */
const EVENT_ID_NEAR_MS = 1_000;

const eventsWalk: Walk<ExportKey> = {
  fields: ingest.EVENT_EXPORT_FIELDS,
  async start(db, r) {
    if (r.after === null) return null;
    const id = r.after;
    const t = id.startsWith('evt_') ? sortableIdTime(id) : null;
    if (t === null)
      throw validationError('/after', 'must be an event id (`evt_…`): the `id` of the last record you have');
    const near = await ingest.findEventKeyNear(
      db,
      r.workspaceId,
      id,
      iso(t - EVENT_ID_NEAR_MS),
      iso(t + EVENT_ID_NEAR_MS),
    );
    if (near) return near;
    // Not where its id says (an event appended with another receipt time): the whole log, in slices.
    const b = EXPORT_PAGES[db.engine];
    let size = b.initial;
    let after: ExportKey | null = null;
    for (;;) {
      const t0 = performance.now();
      const s = await ingest.scanEventKeys(db, r.workspaceId, id, after, size);
      if (s.found) return s.found;
      if (s.read < size || s.last === null) throw afterNotFound('event', id);
      after = s.last;
      // Keys only: cheap rows, so larger slices for the same time.
      size = nextSliceSize(size, performance.now() - t0, { ...boundsNow(db, b), max: 20_000 });
    }
  },
  page: (db, r, after, limit) => ingest.exportEventsPage(db, r.workspaceId, after, r.window, r.format, limit),
};

const profilesWalk: Walk<ExportKey> = {
  fields: profiles.PROFILE_EXPORT_FIELDS,
  async start(db, r) {
    if (r.after === null) return null;
    if (!isUuid(r.after))
      throw validationError('/after', 'must be a profile id (a UUID): the `id` of the last record you have');
    const key = await profiles.findProfileKey(db, r.workspaceId, r.after.toLowerCase());
    if (!key) throw afterNotFound('profile', r.after);
    return key;
  },
  page: (db, r, after, limit) =>
    profiles.exportProfilesPage(db, r.workspaceId, after, r.window, r.format, limit),
};

const ordersWalk: Walk<ExportKey> = {
  fields: commerce.ORDER_EXPORT_FIELDS,
  async start(db, r) {
    if (r.after === null) return null;
    const key = await commerce.findOrderKey(db, r.workspaceId, r.after);
    if (!key) throw afterNotFound('order', r.after);
    return key;
  },
  page: (db, r, after, limit) =>
    commerce.exportOrdersPage(db, r.workspaceId, after, r.window, r.format, limit),
};

const membersWalk: Walk<number> = {
  fields: profiles.PROFILE_EXPORT_FIELDS,
  async start(db, r) {
    // 404 for a segment of another workspace, before anything of it is read.
    await segments.getSegment(db, r.workspaceId, r.segmentId!);
    if (r.after === null) return null;
    if (!isUuid(r.after))
      throw validationError('/after', 'must be a profile id (a UUID): the `id` of the last record you have');
    const seq = await segments.findMemberSeq(db, r.segmentId!, r.after.toLowerCase());
    if (seq === null) throw afterNotFound('member', r.after);
    return seq;
  },
  page: (db, r, after, limit) =>
    segments.exportMembersPage(db, r.workspaceId, r.segmentId!, after ?? 0, r.window, r.format, limit),
};

const WALKS: Record<ExportKind, Walk<unknown>> = {
  events: eventsWalk as Walk<unknown>,
  profiles: profilesWalk as Walk<unknown>,
  orders: ordersWalk as Walk<unknown>,
  'segment-members': membersWalk as Walk<unknown>,
};

/** The columns of a kind's CSV records (and the keys of its NDJSON records), in order. */
export const exportColumns = (kind: ExportKind): string[] => WALKS[kind].fields.map((f) => f.name);

export const EXPORT_CONTENT_TYPES: Record<ExportFormat, string> = {
  ndjson: 'application/x-ndjson; charset=utf-8',
  csv: 'text/csv; charset=utf-8; header=present',
};

/** The file name offered: `events-20260101T120000Z.ndjson`, `segment-seg_…-members-….csv`. */
export function exportFilename(r: ExportRequest, now = new Date()): string {
  const stamp = now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
  const stem = r.kind === 'segment-members' ? `segment-${r.segmentId}-members` : r.kind;
  return `${stem}-${stamp}.${r.format}`;
}

/** What an export read, for its log line: pages, rows read, characters, time spent reading pages. */
export interface ExportStats {
  pages: number;
  rows: number;
  bytes: number;
  pageMs: number;
  largestPage: number;
}

export const newExportStats = (): ExportStats => ({ pages: 0, rows: 0, bytes: 0, pageMs: 0, largestPage: 0 });

/**
 * The export as chunks of text, one page each. The first chunk (the CSV header with the first page)
 * is read when the caller first asks, so every error of the request itself (a bad or unknown
 * `after`, another workspace's segment, a database that does not answer) comes before a byte is
 * sent. The next page is read while the current one is being written (one page ahead, never more),
 * and not at all once the caller stops asking (return()). `db` should be the analytics lane.
 */
export async function* exportChunks(
  db: Db,
  r: ExportRequest,
  stats: ExportStats = newExportStats(),
): AsyncGenerator<string, void, undefined> {
  const walk = WALKS[r.kind];
  const b = EXPORT_PAGES[db.engine];
  const start = await walk.start(db, r);
  const read = (after: unknown, n: number) => {
    const t0 = performance.now();
    const p = walk.page(db, r, after, n).then((page) => {
      const ms = performance.now() - t0;
      stats.pages++;
      stats.rows += page.read;
      stats.bytes += page.text.length;
      stats.pageMs += ms;
      stats.largestPage = Math.max(stats.largestPage, n);
      return { page, n, ms };
    });
    // A page read ahead that nobody awaits (the client left) must not become an unhandled rejection.
    p.catch(() => {});
    return p;
  };
  let pending = read(start, b.initial);
  let prefix = r.format === 'csv' ? csvHeader(walk.fields) : '';
  let first = true;
  for (;;) {
    const { page, n, ms } = await pending;
    const done = page.read < n || page.last === null;
    if (!done) {
      const size = nextPageSize(n, ms, page.text.length, page.read, boundsNow(db, b));
      const pause = busy(db) ? ms * b.busyPause : 0;
      pending = pause > 0 ? sleep(pause).then(() => read(page.last, size)) : read(page.last, size);
      pending.catch(() => {});
    }
    const text = prefix + page.text;
    // The first chunk is always yielded, even empty: it is what tells the caller the export began.
    if (text !== '' || first) yield text;
    prefix = '';
    first = false;
    if (done) return;
  }
}
