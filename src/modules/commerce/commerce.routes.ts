import { Envelope, ok, PageEnvelope } from '../../platform/http/envelope';
import { paged, pageOf } from '../../platform/http/paging';
import { workspaceOf } from '../../platform/http/principal';
import type { App, AppDeps } from '../../platform/http/types';
import {
  DeletedProductSchema,
  ListOrdersQuery,
  ListProductsQuery,
  OrderIdParams,
  OrderSchema,
  PatchProductBody,
  ProductIdParams,
  ProductSchema,
  SaveProductBody,
} from './commerce.schemas';
import * as commerce from './commerce.service';

const security = [{ apiKey: [] }];

export function registerCommerceRoutes(app: App, deps: AppDeps): void {
  app.get(
    '/tenant/orders',
    {
      config: { auth: 'read' },
      schema: {
        tags: ['orders'],
        security,
        summary: 'List orders, newest first (by order time); filter by `profile_id` or `status`.',
        querystring: ListOrdersQuery,
        response: { 200: PageEnvelope(OrderSchema) },
      },
    },
    async (req) => {
      const { limit, cursor, ...filter } = req.query;
      const page = pageOf(req, deps.cursors, 'orders');
      return paged(await commerce.listOrders(deps.db, deps.cursors, workspaceOf(req), page, filter));
    },
  );

  app.get(
    '/tenant/orders/:order_id',
    {
      config: { auth: 'read' },
      schema: {
        tags: ['orders'],
        security,
        summary: 'Read one order by the merchant’s order id.',
        params: OrderIdParams,
        response: { 200: Envelope(OrderSchema) },
      },
    },
    async (req) => ok(await commerce.getOrder(deps.db, workspaceOf(req), req.params.order_id)),
  );

  app.get(
    '/tenant/products',
    {
      config: { auth: 'read' },
      schema: {
        tags: ['products'],
        security,
        summary: 'List the product catalogue in creation order; filter by `category`.',
        querystring: ListProductsQuery,
        response: { 200: PageEnvelope(ProductSchema) },
      },
    },
    async (req) => {
      const { limit, cursor, ...filter } = req.query;
      const page = pageOf(req, deps.cursors, 'products');
      return paged(await commerce.listProducts(deps.db, deps.cursors, workspaceOf(req), page, filter));
    },
  );

  app.get(
    '/tenant/products/:id',
    {
      config: { auth: 'read' },
      schema: {
        tags: ['products'],
        security,
        summary: 'Read one product by the merchant’s product_id.',
        params: ProductIdParams,
        response: { 200: Envelope(ProductSchema) },
      },
    },
    async (req) => ok(await commerce.getProduct(deps.db, workspaceOf(req), req.params.id)),
  );

  app.post(
    '/tenant/products',
    {
      config: {
        auth: 'write',
        audit: { action: 'product.save', target: 'product', id: 'answer.product_id' },
      },
      schema: {
        tags: ['products'],
        security,
        summary:
          'Create a product, or update the given fields of the one with this product_id. The product ' +
          'becomes editor-managed: order items no longer change it.',
        body: SaveProductBody,
        response: { 200: Envelope(ProductSchema) },
      },
    },
    async (req) => ok(await commerce.saveProduct(deps.db, workspaceOf(req), req.body)),
  );

  app.patch(
    '/tenant/products/:id',
    {
      config: { auth: 'write', audit: { action: 'product.update', target: 'product' } },
      schema: {
        tags: ['products'],
        security,
        summary: 'Update some fields of a product (null clears price, currency or category).',
        params: ProductIdParams,
        body: PatchProductBody,
        response: { 200: Envelope(ProductSchema) },
      },
    },
    async (req) => ok(await commerce.updateProduct(deps.db, workspaceOf(req), req.params.id, req.body)),
  );

  app.delete(
    '/tenant/products/:id',
    {
      config: { auth: 'write', audit: { action: 'product.delete', target: 'product' } },
      schema: {
        tags: ['products'],
        security,
        summary: 'Delete a product from the catalogue. Orders keep their item lines.',
        params: ProductIdParams,
        response: { 200: Envelope(DeletedProductSchema) },
      },
    },
    async (req) => {
      await commerce.deleteProduct(deps.db, workspaceOf(req), req.params.id);
      return ok({ product_id: req.params.id, deleted: true as const });
    },
  );
}
