import type { Queryable } from '../../platform/db';
import { movesFrom, movesParams, type ProfileMove, probeEach } from '../../platform/db/moves';
import type { OrderItem } from '../ingest';

/** SQL of orders (one per merchant order_id and workspace). */

export interface OrderRow {
  seq: number;
  order_id: string;
  profile_id: string | null;
  status: string;
  total: number;
  currency: string;
  items: OrderItem[];
  occurred_at: Date;
  event_id: string;
  status_at: Date;
  completed_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

const ORDER_COLUMNS = `seq, order_id, profile_id, status, total, currency, items, occurred_at, event_id,
  status_at, completed_at, created_at, updated_at`;

/** A new order, as insertOrdersIfNew takes it. */
export interface NewOrder {
  workspaceId: string;
  orderId: string;
  profileId: string | null;
  status: string;
  total: number;
  currency: string;
  items: OrderItem[];
  occurredAt: Date;
  eventId: string;
}

/**
 * Creates each order unless one with its order_id exists in its workspace, in one statement (the
 * worker applies a batch's orders at once); `orders` must not repeat a (workspace, order_id).
 * Rows go in key order, so concurrent writers take the unique index's locks in one order and cannot
 * deadlock on it. Returns the rows it created, with their workspace; an order that already existed
 * is absent (nothing written for it).
 */
export async function insertOrdersIfNew(
  q: Queryable,
  orders: readonly NewOrder[],
): Promise<Array<OrderRow & { workspace_id: string }>> {
  if (orders.length === 0) return [];
  const json = JSON.stringify(
    orders.map((o) => ({
      workspace_id: o.workspaceId,
      order_id: o.orderId,
      profile_id: o.profileId,
      status: o.status,
      total: String(o.total),
      currency: o.currency,
      items: o.items,
      occurred_at: o.occurredAt.toISOString(),
      event_id: o.eventId,
    })),
  );
  const { rows } = await q.query<OrderRow & { workspace_id: string }>(
    `INSERT INTO orders (workspace_id, order_id, profile_id, status, total, currency, items, occurred_at,
                         event_id, status_at, completed_at)
     SELECT x.workspace_id, x.order_id, x.profile_id, x.status, x.total, x.currency, x.items, x.occurred_at,
            x.event_id, x.occurred_at, CASE WHEN x.status = 'completed' THEN x.occurred_at END
       FROM jsonb_to_recordset($1::jsonb) AS x(workspace_id uuid, order_id text, profile_id uuid,
              status text, total numeric, currency text, items jsonb, occurred_at timestamptz, event_id text)
      ORDER BY x.workspace_id, x.order_id
     ON CONFLICT (workspace_id, order_id) DO NOTHING
     RETURNING workspace_id, ${ORDER_COLUMNS}`,
    [json],
  );
  return rows;
}

export async function findOrder(
  q: Queryable,
  workspaceId: string,
  orderId: string,
): Promise<OrderRow | null> {
  const { rows } = await q.query<OrderRow>(
    `SELECT ${ORDER_COLUMNS} FROM orders WHERE workspace_id = $1 AND order_id = $2`,
    [workspaceId, orderId],
  );
  return rows[0] ?? null;
}

/** The profiles that own these orders, keyed `workspace|order_id`; an order not found is absent. */
export async function findOrderOwners(
  q: Queryable,
  keys: ReadonlyArray<{ workspaceId: string; orderId: string }>,
): Promise<Map<string, string | null>> {
  if (keys.length === 0) return new Map();
  const { rows } = await q.query<{ workspace_id: string; order_id: string; profile_id: string | null }>(
    `SELECT o.workspace_id, o.order_id, o.profile_id
       FROM unnest($1::uuid[], $2::text[]) AS k(workspace_id, order_id)
       JOIN orders o ON o.workspace_id = k.workspace_id AND o.order_id = k.order_id`,
    [keys.map((k) => k.workspaceId), keys.map((k) => k.orderId)],
  );
  return new Map(rows.map((r) => [`${r.workspace_id}|${r.order_id}`, r.profile_id]));
}

/** The order, locked until the transaction ends (status changes of one order apply one at a time). */
export async function lockOrder(
  q: Queryable,
  workspaceId: string,
  orderId: string,
): Promise<OrderRow | null> {
  const { rows } = await q.query<OrderRow>(
    `SELECT ${ORDER_COLUMNS} FROM orders WHERE workspace_id = $1 AND order_id = $2 FOR UPDATE`,
    [workspaceId, orderId],
  );
  return rows[0] ?? null;
}

/** Moves the order to a new status; `completed_at` is set only the first time it completes. */
export async function updateOrderStatus(
  q: Queryable,
  workspaceId: string,
  orderId: string,
  status: string,
  statusAt: Date,
): Promise<OrderRow> {
  const { rows } = await q.query<OrderRow>(
    `UPDATE orders SET status = $3, status_at = $4, updated_at = now(),
       completed_at = CASE WHEN completed_at IS NULL AND $3 = 'completed' THEN $4::timestamptz ELSE completed_at END
     WHERE workspace_id = $1 AND order_id = $2
     RETURNING ${ORDER_COLUMNS}`,
    [workspaceId, orderId, status, statusAt],
  );
  return rows[0]!;
}

/**
 * The exact numeric sum of each profile's completed orders (0 when none), as text so that no float
 * rounding creeps in on the way to profiles.total_spend.
 */
/**
 * A profile's completed orders summed up: their exact total (numeric, as text), how many, and when
 * the first and the last were placed (null without any). What profiles store on the profile row
 * (total_spend and the summary columns of migration 0021) for segment conditions to read.
 */
export interface OrderSummary {
  profileId: string;
  total: string;
  count: number;
  firstAt: Date | null;
  lastAt: Date | null;
}

export async function summarizeCompletedOrders(
  q: Queryable,
  workspaceId: string,
  profileIds: readonly string[],
): Promise<OrderSummary[]> {
  if (profileIds.length === 0) return [];
  const { rows } = await q.query<{
    id: string;
    total: string;
    count: number;
    first_at: Date | null;
    last_at: Date | null;
  }>(
    `SELECT x.id, coalesce(s.total, 0)::text AS total, coalesce(s.count, 0)::int AS count, s.first_at, s.last_at
       FROM unnest($2::uuid[]) AS x (id)
       LEFT JOIN LATERAL (SELECT sum(o.total) AS total, count(*) AS count, min(o.occurred_at) AS first_at,
                                 max(o.occurred_at) AS last_at
                            FROM orders o
                           WHERE o.workspace_id = $1 AND o.profile_id = x.id AND o.status = 'completed') s ON true`,
    [workspaceId, profileIds],
  );
  return rows.map((r) => ({
    profileId: r.id,
    total: r.total,
    count: r.count,
    firstAt: r.first_at,
    lastAt: r.last_at,
  }));
}

/**
 * Moves the orders of merged-away profiles to their survivors, found by one probe of the profile
 * index per move (probeEach: a join of the moves to the table lets a planner without statistics
 * hash all of it, and the pipeline runs this for every batch with merges). Answers each moved
 * order's old and new profile.
 */
export async function moveOrders(
  q: Queryable,
  workspaceId: string,
  moves: readonly ProfileMove[],
): Promise<Array<{ from: string; to: string }>> {
  if (moves.length === 0) return [];
  const { rows } = await q.query<{ from_id: string; to_id: string }>(
    `UPDATE orders o SET profile_id = x.to_id, updated_at = now()
       FROM (SELECT r.k AS key, m.from_id, m.to_id FROM ${movesFrom(2)}
               ${probeEach('orders', 'x.workspace_id = $1 AND x.profile_id = m.from_id', 'r', 'x.seq AS k')}) AS x
      WHERE o.seq = x.key
     RETURNING x.from_id, x.to_id`,
    [workspaceId, ...movesParams(moves)],
  );
  return rows.map((r) => ({ from: r.from_id, to: r.to_id }));
}

/** Newest first, keyset (occurred_at, seq) descending; occurred_at has millisecond precision. */
export async function listOrders(
  q: Queryable,
  workspaceId: string,
  f: { profileId: string | null; status: string | null; after: [number, number] | null; limit: number },
): Promise<OrderRow[]> {
  const params: unknown[] = [workspaceId, f.limit];
  const where = ['workspace_id = $1'];
  if (f.profileId !== null) {
    params.push(f.profileId);
    where.push(`profile_id = $${params.length}`);
  }
  if (f.status !== null) {
    params.push(f.status);
    where.push(`status = $${params.length}`);
  }
  if (f.after !== null) {
    params.push(new Date(f.after[0]), f.after[1]);
    where.push(`(occurred_at, seq) < ($${params.length - 1}::timestamptz, $${params.length}::bigint)`);
  }
  const { rows } = await q.query<OrderRow>(
    `SELECT ${ORDER_COLUMNS} FROM orders WHERE ${where.join(' AND ')}
     ORDER BY occurred_at DESC, seq DESC LIMIT $2`,
    params,
  );
  return rows;
}

/**
 * Erasure (docs/profiles.md): the orders of these profiles stay for the books but lose their personal
 * link. Returns how many were unlinked.
 */
export async function unlinkOrdersOfProfiles(
  q: Queryable,
  workspaceId: string,
  profileIds: readonly string[],
): Promise<number> {
  const { rowCount } = await q.query(
    'UPDATE orders SET profile_id = NULL, updated_at = now() WHERE workspace_id = $1 AND profile_id = ANY($2::uuid[])',
    [workspaceId, profileIds],
  );
  return rowCount;
}
