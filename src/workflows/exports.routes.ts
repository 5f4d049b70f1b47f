import type { FastifyReply, FastifyRequest } from 'fastify';
import { type Static, Type } from 'typebox';
import type { ExportFormat } from '../platform/db/export-lines';
import { validationError } from '../platform/errors';
import { acquireAnalyticsShare } from '../platform/http/analytics-share';
import { writeAuditEntry } from '../platform/http/audit';
import { createDownloads, DOWNLOAD_STALL_MS } from '../platform/http/download';
import { workspaceOf } from '../platform/http/principal';
import type { App, AppDeps } from '../platform/http/types';
import {
  EXPORT_CONTENT_TYPES,
  type ExportKind,
  exportChunks,
  exportColumns,
  exportFilename,
  newExportStats,
} from './exports';

/**
 * GET /tenant/exports/…: a workspace's events, profiles, orders or a segment's members as one
 * streamed file (NDJSON or CSV), resumable after a dropped connection. The work is ./exports.ts; the
 * streaming, platform/http/download.ts. Every export is an admin action.
 */

const tags = ['exports'];
const security = [{ apiKey: [] }];

/** Seconds a client refused for want of a slot should wait: exports last longer than calculations. */
const EXPORT_RETRY_AFTER_S = 5;

export const ExportQuery = Type.Object(
  {
    format: Type.Optional(
      Type.Enum(['ndjson', 'csv'], {
        default: 'ndjson',
        description:
          '`ndjson` (default): one JSON object per line, LF-terminated. `csv` (RFC 4180): a header row, one ' +
          'column per top-level field, nested values as JSON text, CRLF line ends, NULL an empty field.',
      }),
    ),
    since: Type.Optional(
      Type.String({
        format: 'date-time',
        maxLength: 64,
        description:
          'Only records at or after this time (RFC 3339 with offset): events by when they were received, ' +
          'profiles by when they were created, orders by when they happened, members by when they entered.',
      }),
    ),
    until: Type.Optional(
      Type.String({
        format: 'date-time',
        maxLength: 64,
        description: 'Only records before this time (same times as `since`).',
      }),
    ),
    after: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        description:
          'Resume: the id (first field, first column) of the last record you have; the answer starts right ' +
          'after it, with the same `format`, `since` and `until`. An id this export does not hold is 404 ' +
          '(`details[0].path` `/after`).',
      }),
    ),
  },
  { additionalProperties: false },
);
type ExportQueryT = Static<typeof ExportQuery>;

const SegmentParams = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 100, description: 'The segment id (`seg_…`).' }),
});

const streamed = (kind: ExportKind, what: string) => ({
  description:
    `${what} Columns (CSV) and keys (NDJSON), in order: ${exportColumns(kind)
      .map((c) => `\`${c}\``)
      .join(', ')}. ` +
    'A complete answer ends with the chunked encoding’s last chunk; one that fails after it began ends without ' +
    'it (an incomplete answer): resume with `after`.',
  content: {
    'application/x-ndjson': { schema: Type.String() },
    'text/csv': { schema: Type.String() },
  },
});

const DESCRIPTION =
  'Needs an `admin` key. Streams every record with backpressure, read in short pages (constant memory ' +
  'whatever the workspace holds); the rows of a page are in a stable order, so `after` continues without ' +
  'duplicates or gaps. Counts against `analytics_concurrency` while it streams (429 with `Retry-After` ' +
  `past it). A reader that takes nothing for ${DOWNLOAD_STALL_MS / 1000} s is disconnected. ` +
  '`cdp export` writes it to a file and resumes by itself (docs/operations.md).';

export function registerExportRoutes(app: App, deps: AppDeps): void {
  const downloads = createDownloads(app);

  async function handle(
    req: FastifyRequest,
    reply: FastifyReply,
    kind: ExportKind,
    query: ExportQueryT,
    segmentId: string | null,
  ): Promise<void> {
    const ws = workspaceOf(req);
    const window = { since: query.since ?? null, until: query.until ?? null };
    if (
      window.since !== null &&
      window.until !== null &&
      Date.parse(window.since) >= Date.parse(window.until)
    ) {
      throw validationError('/until', 'must be later than since');
    }
    const { analytics_concurrency: limit } = await deps.settings.read(deps.db, ws);
    const release = acquireAnalyticsShare(ws, limit, EXPORT_RETRY_AFTER_S);
    try {
      const r = {
        workspaceId: ws,
        kind,
        segmentId,
        format: (query.format ?? 'ndjson') as ExportFormat,
        window,
        after: query.after ?? null,
      };
      const stats = newExportStats();
      const t0 = performance.now();
      const chunks = exportChunks(deps.db.lane('analytics'), r, stats);
      // Errors up to here, and in the first page, are ordinary answers in the envelope.
      const first = await chunks.next();
      // The audit entry, before the first byte (the answer is hijacked: no onSend hook writes it).
      try {
        await writeAuditEntry(req, deps.audit, 200);
      } catch (err) {
        await chunks.return(undefined);
        throw err;
      }
      const outcome = await downloads.send(
        reply,
        {
          contentType: EXPORT_CONTENT_TYPES[r.format],
          filename: exportFilename(r),
          first: first.done ? '' : first.value,
          rest: chunks,
        },
        req.log,
      );
      req.log.info(
        {
          workspace_id: ws,
          kind,
          format: r.format,
          outcome,
          ms: Math.round(performance.now() - t0),
          ...stats,
          pageMs: Math.round(stats.pageMs),
        },
        'export ended',
      );
    } finally {
      release();
    }
  }

  app.get(
    '/tenant/exports/events',
    {
      config: { auth: 'admin', audit: { action: 'export.events', target: 'workspace', id: 'workspace' } },
      schema: {
        tags,
        security,
        summary: 'Export the workspace’s events (NDJSON or CSV), in the order they were received.',
        description:
          `${DESCRIPTION} Each record is the event as stored, with \`message_id\` and the \`profile_id\` it was ` +
          'applied to (`null` until processed); `since`/`until` filter on `received_at`. A file of these ' +
          'records is what `cdp import` loads.',
        querystring: ExportQuery,
        response: { 200: streamed('events', 'The events, one record each.') },
      },
    },
    (req, reply) => handle(req, reply, 'events', req.query, null),
  );

  app.get(
    '/tenant/exports/profiles',
    {
      config: { auth: 'admin', audit: { action: 'export.profiles', target: 'workspace', id: 'workspace' } },
      schema: {
        tags,
        security,
        summary: 'Export the workspace’s live profiles (NDJSON or CSV), oldest first.',
        description:
          `${DESCRIPTION} Each record is what \`GET /tenant/profiles/{id}\` shows, identities included; ` +
          '`since`/`until` filter on `created_at`.',
        querystring: ExportQuery,
        response: { 200: streamed('profiles', 'The profiles, one record each.') },
      },
    },
    (req, reply) => handle(req, reply, 'profiles', req.query, null),
  );

  app.get(
    '/tenant/exports/orders',
    {
      config: { auth: 'admin', audit: { action: 'export.orders', target: 'workspace', id: 'workspace' } },
      schema: {
        tags,
        security,
        summary: 'Export the workspace’s orders (NDJSON or CSV), in the order they happened.',
        description:
          `${DESCRIPTION} Each record is what \`GET /tenant/orders\` shows; \`after\` is an \`order_id\`; ` +
          '`since`/`until` filter on `occurred_at`.',
        querystring: ExportQuery,
        response: { 200: streamed('orders', 'The orders, one record each.') },
      },
    },
    (req, reply) => handle(req, reply, 'orders', req.query, null),
  );

  app.get(
    '/tenant/exports/segments/:id/members',
    {
      config: { auth: 'admin', audit: { action: 'export.segment_members', target: 'segment' } },
      schema: {
        tags,
        security,
        summary: 'Export a segment’s current members (NDJSON or CSV), in the order they entered.',
        description:
          `${DESCRIPTION} Each record is the member’s profile as \`GET /tenant/segments/{id}/members\` shows it; ` +
          '`since`/`until` filter on when they entered the segment (a walk over all its members, in short statements).',
        params: SegmentParams,
        querystring: ExportQuery,
        response: { 200: streamed('segment-members', 'The members, one record each.') },
      },
    },
    (req, reply) => handle(req, reply, 'segment-members', req.query, req.params.id),
  );
}
