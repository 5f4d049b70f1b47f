import type { Queryable } from '../../platform/db';
import type { OrderItem } from './order-payload';

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

export interface ProductRow {
  seq: number;
  product_id: string;
  name: string | null;
  price: number | null;
  currency: string | null;
  category: string | null;
  source: 'orders' | 'api';
  created_at: Date;
  updated_at: Date;
}

const ORDER_COLUMNS = `seq, order_id, profile_id, status, total, currency, items, occurred_at, event_id,
  status_at, completed_at, created_at, updated_at`;
const PRODUCT_COLUMNS = 'seq, product_id, name, price, currency, category, source, created_at, updated_at';

// ---- orders ---------------------------------------------------------------------------------------

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
 * Sets each profile's total_spend to the exact numeric sum of its completed orders. Recomputed
 * rather than adjusted by deltas, so no sequence of status changes can make it drift.
 */
export async function recomputeTotalSpend(
  q: Queryable,
  workspaceId: string,
  profileIds: readonly string[],
): Promise<void> {
  if (profileIds.length === 0) return;
  await q.query(
    `UPDATE profiles p SET total_spend = s.total, updated_at = now()
     FROM (
       SELECT x.id, coalesce((SELECT sum(o.total) FROM orders o
                              WHERE o.workspace_id = $1 AND o.profile_id = x.id AND o.status = 'completed'), 0) AS total
       FROM unnest($2::uuid[]) AS x (id)
     ) s
     WHERE p.id = s.id AND p.workspace_id = $1 AND p.total_spend <> s.total`,
    [workspaceId, profileIds],
  );
}

/**
 * Re-points the orders of each merged-away profile (`from`) to its survivor (`to`); returns every
 * profile id, on either side, whose orders changed hands.
 */
export async function moveOrders(
  q: Queryable,
  workspaceId: string,
  moves: ReadonlyArray<{ from: string; to: string }>,
): Promise<string[]> {
  if (moves.length === 0) return [];
  const { rows } = await q.query<{ from_id: string; to_id: string }>(
    `UPDATE orders o SET profile_id = m.to_id, updated_at = now()
       FROM jsonb_to_recordset($2::jsonb) AS m(from_id uuid, to_id uuid)
      WHERE o.workspace_id = $1 AND o.profile_id = m.from_id
     RETURNING m.from_id, m.to_id`,
    [workspaceId, JSON.stringify(moves.map((m) => ({ from_id: m.from, to_id: m.to })))],
  );
  return [...new Set(rows.flatMap((r) => [r.from_id, r.to_id]))];
}

/**
 * The live profile an id stands for: itself, or the survivor it was merged into (following the chain
 * of merges, bounded), so `?profile_id=` with a merged-away id lists the survivor's orders.
 */
export async function resolveProfileId(
  q: Queryable,
  workspaceId: string,
  id: string,
): Promise<string | null> {
  const { rows } = await q.query<{ id: string }>(
    `WITH RECURSIVE chain (id, merged_into, depth) AS (
       SELECT id, merged_into, 0 FROM profiles WHERE workspace_id = $1 AND id = $2
       UNION ALL
       SELECT p.id, p.merged_into, c.depth + 1 FROM profiles p JOIN chain c ON p.id = c.merged_into
       WHERE p.workspace_id = $1 AND c.depth < 200
     )
     SELECT id FROM chain WHERE merged_into IS NULL LIMIT 1`,
    [workspaceId, id],
  );
  return rows[0]?.id ?? null;
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

// ---- products -------------------------------------------------------------------------------------

/**
 * Products named by an order's items. New ones are inserted; existing ones that only orders have
 * described follow the newest order (by event time) when its name, price or category differ.
 * Products an editor created or edited are never changed here. Unchanged rows are not written (nor
 * locked), so popular products do not serialize concurrent workers.
 */
export function upsertProductsFromOrder(
  q: Queryable,
  workspaceId: string,
  items: ReadonlyArray<OrderItem & { product_id: string }>,
  currency: string,
  observedAt: Date,
): Promise<void> {
  return upsertProductsFromOrders(
    q,
    workspaceId,
    items.map((i) => ({ ...i, currency, observedAt })),
  );
}

/** One product as a batch of orders describes it (see upsertProductsFromOrders). */
export interface ObservedProduct {
  product_id: string;
  name: string | null;
  price: number | null;
  /** The currency of the order that gave `price`. */
  currency: string;
  category: string | null;
  observedAt: Date;
}

/**
 * upsertProductsFromOrder for a whole batch of orders of one workspace, in two statements. Each
 * product_id must appear once (the caller folds a batch's mentions of it into one observation), with
 * its own observation time and currency. Same rules: new products are inserted; products only orders have described
 * follow a newer observation when it differs; editors' products are never touched.
 */
export async function upsertProductsFromOrders(
  q: Queryable,
  workspaceId: string,
  products: readonly ObservedProduct[],
): Promise<void> {
  if (products.length === 0) return;
  const json = JSON.stringify(
    [...products]
      .sort((a, b) => (a.product_id < b.product_id ? -1 : a.product_id > b.product_id ? 1 : 0))
      .map((p) => ({
        product_id: p.product_id,
        name: p.name,
        price: p.price === null ? null : String(p.price),
        currency: p.currency,
        category: p.category,
        observed_at: p.observedAt.toISOString(),
      })),
  );
  const recordset = `jsonb_to_recordset($2::jsonb) AS x (product_id text, name text, price numeric,
    currency text, category text, observed_at timestamptz)`;
  await q.query(
    `INSERT INTO products (workspace_id, product_id, name, price, currency, category, source, observed_at)
     SELECT $1, x.product_id, x.name, x.price, CASE WHEN x.price IS NOT NULL THEN x.currency END, x.category,
            'orders', x.observed_at
     FROM ${recordset} ORDER BY x.product_id
     ON CONFLICT (workspace_id, product_id) DO NOTHING`,
    [workspaceId, json],
  );
  await q.query(
    `UPDATE products p SET
       name = coalesce(x.name, p.name),
       price = coalesce(x.price, p.price),
       currency = CASE WHEN x.price IS NOT NULL THEN x.currency ELSE p.currency END,
       category = coalesce(x.category, p.category),
       observed_at = x.observed_at,
       updated_at = now()
     FROM ${recordset}
     WHERE p.workspace_id = $1 AND p.product_id = x.product_id AND p.source = 'orders'
       AND (p.observed_at IS NULL OR p.observed_at <= x.observed_at)
       AND (p.name IS DISTINCT FROM coalesce(x.name, p.name)
         OR p.price IS DISTINCT FROM coalesce(x.price, p.price)
         OR (x.price IS NOT NULL AND p.currency IS DISTINCT FROM x.currency)
         OR p.category IS DISTINCT FROM coalesce(x.category, p.category))`,
    [workspaceId, json],
  );
}

export async function listProducts(
  q: Queryable,
  workspaceId: string,
  f: { category: string | null; afterSeq: number | null; limit: number },
): Promise<ProductRow[]> {
  const { rows } = await q.query<ProductRow>(
    `SELECT ${PRODUCT_COLUMNS} FROM products
     WHERE workspace_id = $1 AND ($2::text IS NULL OR category = $2::text)
       AND ($3::bigint IS NULL OR seq > $3::bigint)
     ORDER BY seq LIMIT $4`,
    [workspaceId, f.category, f.afterSeq, f.limit],
  );
  return rows;
}

export async function findProduct(
  q: Queryable,
  workspaceId: string,
  productId: string,
): Promise<ProductRow | null> {
  const { rows } = await q.query<ProductRow>(
    `SELECT ${PRODUCT_COLUMNS} FROM products WHERE workspace_id = $1 AND product_id = $2`,
    [workspaceId, productId],
  );
  return rows[0] ?? null;
}

/** Field values an editor writes; `undefined` leaves a field as it is, `null` clears it. */
export interface ProductFields {
  name?: string | undefined;
  price?: number | null | undefined;
  currency?: string | null | undefined;
  category?: string | null | undefined;
}

/**
 * Creates the product or updates the given fields of an existing one, and marks it editor-managed.
 * Currency: the given one, else the product's, else USD once it has a price (the orders' default).
 */
export async function upsertProduct(
  q: Queryable,
  workspaceId: string,
  productId: string,
  f: ProductFields & { name: string },
): Promise<ProductRow> {
  const { rows } = await q.query<ProductRow>(
    `INSERT INTO products AS p (workspace_id, product_id, name, price, currency, category, source)
     VALUES ($1, $2, $3, $4::numeric, coalesce($6::text, CASE WHEN $4::numeric IS NOT NULL THEN 'USD' END),
             $8::text, 'api')
     ON CONFLICT (workspace_id, product_id) DO UPDATE SET
       name = EXCLUDED.name,
       price = CASE WHEN $5::boolean THEN EXCLUDED.price ELSE p.price END,
       currency = CASE WHEN $7::boolean THEN $6::text
                       ELSE coalesce(p.currency, CASE WHEN $5::boolean AND $4::numeric IS NOT NULL THEN 'USD' END) END,
       category = CASE WHEN $9::boolean THEN EXCLUDED.category ELSE p.category END,
       source = 'api',
       updated_at = now()
     RETURNING ${PRODUCT_COLUMNS}`,
    [
      workspaceId,
      productId,
      f.name,
      f.price === undefined || f.price === null ? null : String(f.price),
      f.price !== undefined,
      f.currency ?? null,
      f.currency !== undefined,
      f.category ?? null,
      f.category !== undefined,
    ],
  );
  return rows[0]!;
}

/** Updates the given fields of an existing product; null when there is none. */
export async function updateProduct(
  q: Queryable,
  workspaceId: string,
  productId: string,
  f: ProductFields,
): Promise<ProductRow | null> {
  const { rows } = await q.query<ProductRow>(
    `UPDATE products p SET
       name = CASE WHEN $3::boolean THEN $4::text ELSE p.name END,
       price = CASE WHEN $5::boolean THEN $6::numeric ELSE p.price END,
       currency = CASE WHEN $7::boolean THEN $8::text
                       ELSE coalesce(p.currency, CASE WHEN $5::boolean AND $6::numeric IS NOT NULL THEN 'USD' END) END,
       category = CASE WHEN $9::boolean THEN $10::text ELSE p.category END,
       source = 'api',
       updated_at = now()
     WHERE p.workspace_id = $1 AND p.product_id = $2
     RETURNING ${PRODUCT_COLUMNS}`,
    [
      workspaceId,
      productId,
      f.name !== undefined,
      f.name ?? null,
      f.price !== undefined,
      f.price === undefined || f.price === null ? null : String(f.price),
      f.currency !== undefined,
      f.currency ?? null,
      f.category !== undefined,
      f.category ?? null,
    ],
  );
  return rows[0] ?? null;
}

export async function deleteProduct(q: Queryable, workspaceId: string, productId: string): Promise<boolean> {
  const { rowCount } = await q.query('DELETE FROM products WHERE workspace_id = $1 AND product_id = $2', [
    workspaceId,
    productId,
  ]);
  return rowCount > 0;
}
