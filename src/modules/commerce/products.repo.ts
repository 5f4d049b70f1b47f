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

/** Where a mention sits among a product's mentions: its event's time, then its place in the log. */
export interface MentionMark {
  at: Date;
  /** The event's seq in the log (0 for an order applied outside it, e.g. a fixture). */
  seq: number;
}

/**
 * One product as orders describe it: each field the value of the newest mention that had one
 * (newest by event time, then by place in the log), with that mention's mark. A price carries the
 * currency of its order.
 */
export interface ObservedProduct {
  product_id: string;
  name: ({ value: string } & MentionMark) | null;
  price: ({ value: number; currency: string } & MentionMark) | null;
  category: ({ value: string } & MentionMark) | null;
}

/** The observation one order item makes. */
export function mentionOf(
  item: OrderItem & { product_id: string },
  currency: string,
  mark: MentionMark,
): ObservedProduct {
  return {
    product_id: item.product_id,
    name: item.name === null ? null : { value: item.name, ...mark },
    price: item.price === null ? null : { value: item.price, currency, ...mark },
    category: item.category === null ? null : { value: item.category, ...mark },
  };
}

const newer = (a: MentionMark, b: MentionMark): boolean =>
  a.at.getTime() !== b.at.getTime() ? a.at.getTime() > b.at.getTime() : a.seq >= b.seq;

/** Two observations of one product folded into one: per field, the newer mention's value (ties: `b`). */
export function foldObservations(a: ObservedProduct, b: ObservedProduct): ObservedProduct {
  const pick = <T extends MentionMark>(x: T | null, y: T | null): T | null =>
    x === null ? y : y === null ? x : newer(y, x) ? y : x;
  return {
    product_id: a.product_id,
    name: pick(a.name, b.name),
    price: pick(a.price, b.price),
    category: pick(a.category, b.category),
  };
}

/**
 * Products named by orders, one observation per product_id (the caller folds a batch's mentions of
 * one product with foldObservations), in two statements. New products are inserted. A product only
 * orders have described takes, field by field, a value whose mention is newer than the one that set
 * that field (docs/commerce.md, "Products"); its marks move even when the value is the same, so the
 * result does not depend on the order mentions are applied in. Products an editor created or edited
 * are never changed here.
 */
export async function upsertProductsFromOrders(
  q: Queryable,
  workspaceId: string,
  products: readonly ObservedProduct[],
): Promise<void> {
  if (products.length === 0) return;
  const iso = (m: MentionMark | null) => (m === null ? null : m.at.toISOString());
  const json = JSON.stringify(
    [...products]
      .sort((a, b) => (a.product_id < b.product_id ? -1 : a.product_id > b.product_id ? 1 : 0))
      .map((p) => ({
        product_id: p.product_id,
        name: p.name?.value ?? null,
        name_at: iso(p.name),
        name_seq: p.name?.seq ?? null,
        price: p.price === null ? null : String(p.price.value),
        currency: p.price?.currency ?? null,
        price_at: iso(p.price),
        price_seq: p.price?.seq ?? null,
        category: p.category?.value ?? null,
        category_at: iso(p.category),
        category_seq: p.category?.seq ?? null,
      })),
  );
  const recordset = `jsonb_to_recordset($2::jsonb) AS x (product_id text,
    name text, name_at timestamptz, name_seq bigint,
    price numeric, currency text, price_at timestamptz, price_seq bigint,
    category text, category_at timestamptz, category_seq bigint)`;
  await q.query(
    `INSERT INTO products (workspace_id, product_id, name, price, currency, category, source,
                           name_at, name_seq, price_at, price_seq, category_at, category_seq)
     SELECT $1, x.product_id, x.name, x.price, x.currency, x.category, 'orders',
            x.name_at, x.name_seq, x.price_at, x.price_seq, x.category_at, x.category_seq
     FROM ${recordset} ORDER BY x.product_id
     ON CONFLICT (workspace_id, product_id) DO NOTHING`,
    [workspaceId, json],
  );
  // A field takes the mention's value when the mention has one and is at least as new as the
  // field's mark (a row comparison: time, then seq); a field never set has no mark.
  const takes = (f: string) =>
    `(x.${f}_at IS NOT NULL AND (p.${f}_at IS NULL OR (p.${f}_at, p.${f}_seq) <= (x.${f}_at, x.${f}_seq)))`;
  await q.query(
    `UPDATE products p SET
       name = CASE WHEN ${takes('name')} THEN x.name ELSE p.name END,
       name_at = CASE WHEN ${takes('name')} THEN x.name_at ELSE p.name_at END,
       name_seq = CASE WHEN ${takes('name')} THEN x.name_seq ELSE p.name_seq END,
       price = CASE WHEN ${takes('price')} THEN x.price ELSE p.price END,
       currency = CASE WHEN ${takes('price')} THEN x.currency ELSE p.currency END,
       price_at = CASE WHEN ${takes('price')} THEN x.price_at ELSE p.price_at END,
       price_seq = CASE WHEN ${takes('price')} THEN x.price_seq ELSE p.price_seq END,
       category = CASE WHEN ${takes('category')} THEN x.category ELSE p.category END,
       category_at = CASE WHEN ${takes('category')} THEN x.category_at ELSE p.category_at END,
       category_seq = CASE WHEN ${takes('category')} THEN x.category_seq ELSE p.category_seq END,
       updated_at = CASE
         WHEN (${takes('name')} AND p.name IS DISTINCT FROM x.name)
           OR (${takes('price')} AND (p.price IS DISTINCT FROM x.price OR p.currency IS DISTINCT FROM x.currency))
           OR (${takes('category')} AND p.category IS DISTINCT FROM x.category)
         THEN now() ELSE p.updated_at END
     FROM ${recordset}
     WHERE p.workspace_id = $1 AND p.product_id = x.product_id AND p.source = 'orders'
       AND (${takes('name')} OR ${takes('price')} OR ${takes('category')})`,
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
