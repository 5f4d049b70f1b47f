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
 * Orders as a workspace export reads them (GET /tenant/exports/orders): each record is what
 * GET /tenant/orders shows (orders.service.ts presentOrder), in the order they happened,
 * (occurred_at, seq): orders_list_idx read backwards, a page per statement.
 */
export const ORDER_EXPORT_FIELDS: readonly ExportField[] = [
  { name: 'order_id', sql: 'o.order_id', kind: 'text' },
  { name: 'profile_id', sql: 'o.profile_id', kind: 'text' },
  { name: 'status', sql: 'o.status', kind: 'text' },
  { name: 'total', sql: 'o.total', kind: 'number' },
  { name: 'currency', sql: 'o.currency', kind: 'text' },
  { name: 'items', sql: 'o.items', kind: 'json' },
  { name: 'occurred_at', sql: 'o.occurred_at', kind: 'time' },
  { name: 'event_id', sql: 'o.event_id', kind: 'text' },
  { name: 'created_at', sql: 'o.created_at', kind: 'time' },
  { name: 'updated_at', sql: 'o.updated_at', kind: 'time' },
];

/** One page of the workspace's orders after `after` that happened within the window. */
export function exportOrdersPage(
  q: Queryable,
  workspaceId: string,
  after: ExportKey | null,
  window: ExportWindow,
  format: ExportFormat,
  limit: number,
): Promise<ExportPage<ExportKey>> {
  const p = pageParams();
  return readPage(
    q,
    `SELECT ${exportLineSql(ORDER_EXPORT_FIELDS, format)} AS line, o.occurred_at::text AS at, o.seq
       FROM orders o
      WHERE o.workspace_id = ${p.ref(workspaceId, 'uuid')}
        AND ${keysetWindowSql('o.occurred_at', 'o.seq', after, window, p)}
      ORDER BY o.occurred_at, o.seq LIMIT ${p.ref(limit, 'integer')}`,
    p,
  );
}

/** Where order `orderId` of the workspace stands in that order, or null when there is none. */
export async function findOrderKey(
  q: Queryable,
  workspaceId: string,
  orderId: string,
): Promise<ExportKey | null> {
  const { rows } = await q.query<ExportKey>(
    'SELECT occurred_at::text AS at, seq FROM orders WHERE workspace_id = $1 AND order_id = $2',
    [workspaceId, orderId],
  );
  return rows[0] ?? null;
}
