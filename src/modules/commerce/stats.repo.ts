import type { Queryable } from '../../platform/db';

/**
 * Completed orders placed since `since`, per currency (a range of orders_list_idx), largest first;
 * at most 20 currencies. Totals are numeric, summed exactly and sent as decimal text.
 */
export async function revenueSince(
  q: Queryable,
  workspaceId: string,
  since: Date,
): Promise<Array<{ currency: string; total: string; orders: number }>> {
  const { rows } = await q.query<{ currency: string; total: string; orders: number }>(
    `SELECT currency, sum(total)::text AS total, count(*)::int AS orders FROM orders
      WHERE workspace_id = $1 AND occurred_at >= $2 AND status = 'completed'
      GROUP BY currency ORDER BY sum(total) DESC, currency LIMIT 20`,
    [workspaceId, since],
  );
  return rows;
}
