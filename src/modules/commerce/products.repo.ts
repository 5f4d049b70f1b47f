import type { Queryable } from '../../platform/db';
import type { OrderItem } from '../ingest';

/** SQL of the product catalogue. */

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

const PRODUCT_COLUMNS = 'seq, product_id, name, price, currency, category, source, created_at, updated_at';

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
