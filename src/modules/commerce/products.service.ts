import { type CursorCodec, type Page, type PageRequest, toPage } from '../../platform/cursor';
import type { Db } from '../../platform/db';
import { notFound } from '../../platform/errors';
import { iso } from '../../platform/http/envelope';
import { keyset } from './keyset';
import * as repo from './products.repo';

export interface ProductView {
  product_id: string;
  name: string | null;
  price: number | null;
  currency: string | null;
  category: string | null;
  source: 'orders' | 'api';
  created_at: string;
  updated_at: string;
}

const presentProduct = (r: repo.ProductRow): ProductView => ({
  product_id: r.product_id,
  name: r.name,
  price: r.price,
  currency: r.currency,
  category: r.category,
  source: r.source,
  created_at: iso(r.created_at)!,
  updated_at: iso(r.updated_at)!,
});

export async function listProducts(
  db: Db,
  codec: CursorCodec,
  workspaceId: string,
  page: PageRequest,
  filter: { category?: string | undefined },
): Promise<Page<ProductView>> {
  const afterSeq = keyset(page.after, 1)?.[0] ?? null;
  const rows = await repo.listProducts(db, workspaceId, {
    category: filter.category ?? null,
    afterSeq,
    limit: page.limit + 1,
  });
  return toPage(codec, page, rows, (r) => [r.seq], presentProduct);
}

export async function getProduct(db: Db, workspaceId: string, productId: string): Promise<ProductView> {
  const row = await repo.findProduct(db, workspaceId, productId);
  if (!row) throw notFound('product');
  return presentProduct(row);
}

export async function saveProduct(
  db: Db,
  workspaceId: string,
  input: repo.ProductFields & { product_id: string; name: string },
): Promise<ProductView> {
  const { product_id, ...fields } = input;
  return presentProduct(await repo.upsertProduct(db, workspaceId, product_id, fields));
}

export async function updateProduct(
  db: Db,
  workspaceId: string,
  productId: string,
  fields: repo.ProductFields,
): Promise<ProductView> {
  const row = await repo.updateProduct(db, workspaceId, productId, fields);
  if (!row) throw notFound('product');
  return presentProduct(row);
}

export async function deleteProduct(db: Db, workspaceId: string, productId: string): Promise<void> {
  if (!(await repo.deleteProduct(db, workspaceId, productId))) throw notFound('product');
}
