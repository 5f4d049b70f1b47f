import type { Queryable } from '../../platform/db';
import {
  type ExportField,
  type ExportFormat,
  type ExportKey,
  type ExportPage,
  type ExportWindow,
  exportLineSql,
  keysetWindowSql,
  pageParams,
  readPage,
} from '../../platform/db/export-lines';

/**
 * The event log as a workspace export reads it (GET /tenant/exports/events): the events in the order
 * they were received, (received_at, seq), through events_export_idx (migrations/0040), a page per
 * statement. A record is the API's event (presentEvent) plus `message_id` and the `profile_id` it
 * was applied to (null until processed, or when it was never applied): what `cdp import` needs to
 * store it again, with the same de-duplication key.
 */
export const EVENT_EXPORT_FIELDS: readonly ExportField[] = [
  { name: 'id', sql: 'e.id', kind: 'text' },
  { name: 'message_id', sql: 'e.message_id', kind: 'text' },
  { name: 'event_type', sql: 'e.event_type', kind: 'text' },
  { name: 'event_name', sql: 'e.event_name', kind: 'text' },
  { name: 'anonymous_id', sql: 'e.anonymous_id', kind: 'text' },
  { name: 'identity', sql: 'e.identity', kind: 'text' },
  { name: 'payload', sql: 'e.payload', kind: 'json' },
  { name: 'timestamp', sql: 'e.occurred_at', kind: 'time' },
  { name: 'received_at', sql: 'e.received_at', kind: 'time' },
  { name: 'profile_id', sql: 'ep.profile_id', kind: 'text' },
];

/** One page of the workspace's events after `after`, within the window, as finished lines. */
export function exportEventsPage(
  q: Queryable,
  workspaceId: string,
  after: ExportKey | null,
  window: ExportWindow,
  format: ExportFormat,
  limit: number,
): Promise<ExportPage<ExportKey>> {
  const p = pageParams();
  // The applied profile is one primary-key probe of event_profiles per row (a lateral probe: a
  // planner without statistics would otherwise hash the whole table, platform/db/moves.ts).
  return readPage(
    q,
    `SELECT ${exportLineSql(EVENT_EXPORT_FIELDS, format)} AS line, e.received_at::text AS at, e.seq
       FROM events e
       LEFT JOIN LATERAL (SELECT x.profile_id FROM event_profiles x WHERE x.seq = e.seq OFFSET 0) ep ON true
      WHERE e.workspace_id = ${p.ref(workspaceId, 'uuid')}
        AND ${keysetWindowSql('e.received_at', 'e.seq', after, window, p)}
      ORDER BY e.received_at, e.seq LIMIT ${p.ref(limit, 'integer')}`,
    p,
  );
}

/**
 * The key of the workspace's event `id`, looked for among the events received between `from` and
 * `to` (ISO 8601): the event id carries the millisecond it was made, which for every event stored
 * through the API is the moment after its receipt, so this narrow range of the index finds it.
 */
export async function findEventKeyNear(
  q: Queryable,
  workspaceId: string,
  id: string,
  from: string,
  to: string,
): Promise<ExportKey | null> {
  const { rows } = await q.query<ExportKey>(
    `SELECT received_at::text AS at, seq FROM events
      WHERE workspace_id = $1 AND received_at >= $2::timestamptz AND received_at <= $3::timestamptz AND id = $4
      LIMIT 1`,
    [workspaceId, from, to, id],
  );
  return rows[0] ?? null;
}

/**
 * One slice of the search for event `id` along the whole workspace (events whose receipt time is
 * not their id's: appended with another time by a loader or a test): the key of `id` if it is among
 * the `limit` events after `after`, and the last key read (null at the end).
 */
export async function scanEventKeys(
  q: Queryable,
  workspaceId: string,
  id: string,
  after: ExportKey | null,
  limit: number,
): Promise<{ found: ExportKey | null; last: ExportKey | null; read: number }> {
  const p = pageParams();
  // The page's only "line" is the key of `id`, if it is there: `received_at|seq`.
  const page = await readPage(
    q,
    `SELECT CASE WHEN e.id = ${p.ref(id, 'text')} THEN e.received_at::text || '|' || e.seq END AS line,
            e.received_at::text AS at, e.seq
       FROM events e
      WHERE e.workspace_id = ${p.ref(workspaceId, 'uuid')}
        AND ${keysetWindowSql('e.received_at', 'e.seq', after, { since: null, until: null }, p)}
      ORDER BY e.received_at, e.seq LIMIT ${p.ref(limit, 'integer')}`,
    p,
  );
  const bar = page.text.lastIndexOf('|');
  const found = bar === -1 ? null : { at: page.text.slice(0, bar), seq: Number(page.text.slice(bar + 1)) };
  return { found, last: page.last, read: page.read };
}
