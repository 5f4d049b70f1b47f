import { type CursorCodec, type Page, type PageRequest, toPage } from '../../platform/cursor';
import type { Db, Queryable } from '../../platform/db';
import { AppError, notFound } from '../../platform/errors';
import { iso } from '../../platform/http/envelope';
import { isUuid } from '../../platform/ids';
import { writeOutbox, writeOutboxMany } from '../outbox/outbox.repo';
import * as repo from './commerce.repo';
import { type NormalizedOrder, type OrderItem, productsOf, readOrderPayload } from './order-payload';

// ---- order events (called by the processing worker) ------------------------------------------------

export interface OrderEvent {
  workspaceId: string;
  /** The resolved (surviving) profile the event was applied to. */
  profileId: string;
  eventId: string;
  occurredAt: Date;
  payload: Record<string, unknown>;
}

/**
 * What an order event did: `created` a new order, `updated` its status, `unchanged` (a re-sent
 * event, same status), `stale` (an event older than the order's last status change), `ignored`
 * (payload unusable: no order_id, bad total, currency or status).
 */
export type OrderOutcome = 'created' | 'updated' | 'unchanged' | 'stale' | 'ignored';

/**
 * Applies one `order` event inside the caller's transaction (the worker's, so the order, the
 * products, total_spend and the outbox fact commit together with the event being marked processed).
 *
 * Rules (docs/commerce.md):
 * - One order per (workspace, order_id). The first event creates it with its total, currency, items
 *   and profile; those never change afterwards, so a re-sent event does nothing.
 * - A later event for the same order_id with another status moves the order to that status, unless
 *   the event is older (by event time) than the last status change: a late event cannot undo a newer
 *   one. Any status string is accepted; only `completed` counts as revenue.
 * - total_spend of the order's profile is recomputed whenever the order enters or leaves `completed`.
 * - `order.completed` is written to the outbox the first time the order reaches `completed`, never
 *   again (completed → refunded → completed fires once).
 * - New orders upsert their items' products (see repo.upsertProductsFromOrder).
 */
export async function applyOrderEvent(tx: Queryable, e: OrderEvent): Promise<OrderOutcome> {
  const order = readOrderPayload(e.payload);
  if (order === null) return 'ignored';

  const [created] = await repo.insertOrdersIfNew(tx, [newOrder(e, order)]);
  if (created) {
    await repo.upsertProductsFromOrder(
      tx,
      e.workspaceId,
      productsOf(order.items),
      order.currency,
      e.occurredAt,
    );
    if (created.status === 'completed') await orderCompleted(tx, e.workspaceId, created);
    return 'created';
  }

  const existing = await repo.lockOrder(tx, e.workspaceId, order.orderId);
  if (!existing) return 'ignored'; // deleted with its workspace meanwhile
  if (existing.status === order.status) return 'unchanged';
  if (e.occurredAt.getTime() < existing.status_at.getTime()) return 'stale';

  const updated = await repo.updateOrderStatus(tx, e.workspaceId, order.orderId, order.status, e.occurredAt);
  const wasCompleted = existing.status === 'completed';
  const isCompleted = updated.status === 'completed';
  if (isCompleted && existing.completed_at === null) {
    await orderCompleted(tx, e.workspaceId, updated);
  } else if (wasCompleted !== isCompleted && updated.profile_id !== null) {
    await repo.recomputeTotalSpend(tx, e.workspaceId, [updated.profile_id]);
  }
  return 'updated';
}

/**
 * applyOrderEvent for a whole batch, in the worker's transaction, with the same rules and outcomes
 * (one per event, in order). New orders, by far the common case, are written with a handful of
 * statements for the batch instead of five round trips each: one multi-row insert, one products
 * upsert per workspace (each product once, merged from its mentions oldest first so the newest
 * non-empty value of each field wins, as one-by-one application in time order would), one
 * total_spend recomputation and one outbox insert. Events for an order that already exists, or a
 * second event for an order_id in the same batch, then go through applyOrderEvent one by one, after
 * the first, so one order's events still apply in order.
 */
export async function applyOrderEvents(
  tx: Queryable,
  events: readonly OrderEvent[],
): Promise<OrderOutcome[]> {
  const outcomes: OrderOutcome[] = events.map(() => 'ignored');
  const firsts = new Map<string, { index: number; order: NormalizedOrder }>();
  const later: number[] = [];
  events.forEach((e, index) => {
    const order = readOrderPayload(e.payload);
    if (order === null) return;
    const key = `${e.workspaceId}|${order.orderId}`;
    if (firsts.has(key)) later.push(index);
    else firsts.set(key, { index, order });
  });

  const created = await repo.insertOrdersIfNew(
    tx,
    [...firsts.values()].map(({ index, order }) => newOrder(events[index]!, order)),
  );
  const createdByKey = new Map(created.map((row) => [`${row.workspace_id}|${row.order_id}`, row]));
  const productsByWorkspace = new Map<string, Map<string, repo.ObservedProduct>>();
  const completed: Array<repo.OrderRow & { workspace_id: string }> = [];
  const existing: number[] = [];
  for (const [key, { index, order }] of firsts) {
    const row = createdByKey.get(key);
    if (!row) {
      existing.push(index);
      continue;
    }
    outcomes[index] = 'created';
    if (row.status === 'completed') completed.push(row);
    const e = events[index]!;
    const products = productsByWorkspace.get(e.workspaceId) ?? new Map<string, repo.ObservedProduct>();
    productsByWorkspace.set(e.workspaceId, products);
    for (const item of productsOf(order.items)) {
      const seen = products.get(item.product_id);
      products.set(item.product_id, mergeObservation(seen, item, order.currency, e.occurredAt));
    }
  }
  for (const [workspaceId, products] of productsByWorkspace) {
    await repo.upsertProductsFromOrders(tx, workspaceId, [...products.values()]);
  }
  const spenders = new Map<string, Set<string>>();
  for (const o of completed) {
    if (o.profile_id === null) continue;
    const ids = spenders.get(o.workspace_id) ?? new Set<string>();
    spenders.set(o.workspace_id, ids.add(o.profile_id));
  }
  for (const [workspaceId, ids] of spenders) await repo.recomputeTotalSpend(tx, workspaceId, [...ids]);
  await writeOutboxMany(
    tx,
    completed.map((o) => ({ workspaceId: o.workspace_id, type: 'order.completed', data: completedFact(o) })),
  );

  for (const index of [...existing, ...later].sort((a, b) => a - b)) {
    outcomes[index] = await applyOrderEvent(tx, events[index]!);
  }
  return outcomes;
}

/**
 * One product's mentions in a batch folded into one observation: a mention at least as new as the
 * folded one overrides each field it has a value for (price and its currency together).
 */
function mergeObservation(
  seen: repo.ObservedProduct | undefined,
  item: OrderItem & { product_id: string },
  currency: string,
  at: Date,
): repo.ObservedProduct {
  const mention = { ...item, currency, observedAt: at };
  if (!seen) return mention;
  const [older, newer] = at.getTime() >= seen.observedAt.getTime() ? [seen, mention] : [mention, seen];
  const priced = newer.price !== null ? newer : older;
  return {
    product_id: item.product_id,
    name: newer.name ?? older.name,
    price: priced.price,
    currency: priced.currency,
    category: newer.category ?? older.category,
    observedAt: newer.observedAt,
  };
}

/** The order an event creates if its order_id is new: everything but the status is fixed then. */
const newOrder = (e: OrderEvent, order: NormalizedOrder): repo.NewOrder => ({
  workspaceId: e.workspaceId,
  orderId: order.orderId,
  profileId: e.profileId,
  status: order.status,
  total: order.total,
  currency: order.currency,
  items: order.items,
  occurredAt: e.occurredAt,
  eventId: e.eventId,
});

/** First completion of an order: revenue for its profile and one `order.completed` fact. */
async function orderCompleted(tx: Queryable, workspaceId: string, o: repo.OrderRow): Promise<void> {
  if (o.profile_id !== null) await repo.recomputeTotalSpend(tx, workspaceId, [o.profile_id]);
  await writeOutbox(tx, workspaceId, 'order.completed', completedFact(o));
}

const completedFact = (o: repo.OrderRow): Record<string, unknown> => ({
  order_id: o.order_id,
  profile_id: o.profile_id,
  status: o.status,
  total: o.total,
  currency: o.currency,
  items: o.items,
  occurred_at: iso(o.occurred_at),
  event_id: o.event_id,
});

/**
 * Profile merge support: the orders of merged-away profiles now belong to their survivors, whose
 * total_spend is recomputed (and the merged-away profiles' drop to 0). Runs in the merge's
 * transaction; a worker batch passes all its merges at once (two statements however many); a no-op
 * when none of the merged-away profiles had orders.
 */
export async function reassignOrders(
  tx: Queryable,
  workspaceId: string,
  moves: ReadonlyArray<{ from: string; to: string }>,
): Promise<void> {
  const byFrom = new Map<string, string>();
  for (const m of moves) if (m.from !== m.to && isUuid(m.from)) byFrom.set(m.from, m.to);
  if (byFrom.size === 0) return;
  const touched = await repo.moveOrders(
    tx,
    workspaceId,
    [...byFrom].map(([from, to]) => ({ from, to })),
  );
  if (touched.length > 0) await repo.recomputeTotalSpend(tx, workspaceId, touched);
}

// ---- reads and editor writes (routes) -------------------------------------------------------------

export interface OrderView {
  order_id: string;
  profile_id: string | null;
  status: string;
  total: number;
  currency: string;
  items: OrderItem[];
  occurred_at: string;
  event_id: string;
  created_at: string;
  updated_at: string;
}

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

const presentOrder = (r: repo.OrderRow): OrderView => ({
  order_id: r.order_id,
  profile_id: r.profile_id,
  status: r.status,
  total: r.total,
  currency: r.currency,
  items: r.items,
  occurred_at: iso(r.occurred_at)!,
  event_id: r.event_id,
  created_at: iso(r.created_at)!,
  updated_at: iso(r.updated_at)!,
});

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

/** The decoded keyset, checked: a sealed cursor of the right collection always passes. */
function keyset(k: unknown[] | null, n: number): number[] | null {
  if (k === null) return null;
  if (k.length !== n || !k.every((v) => typeof v === 'number' && Number.isSafeInteger(v))) {
    throw new AppError('INVALID_CURSOR', 'cursor is not valid for this collection');
  }
  return k as number[];
}

export async function listOrders(
  db: Db,
  codec: CursorCodec,
  workspaceId: string,
  page: PageRequest,
  filter: { profile_id?: string | undefined; status?: string | undefined },
): Promise<Page<OrderView>> {
  let profileId: string | null = null;
  if (filter.profile_id !== undefined) {
    profileId = await repo.resolveProfileId(db, workspaceId, filter.profile_id);
    // An unknown profile (or one of another workspace) simply has no orders here.
    if (profileId === null) return toPage(codec, page, [], () => [], presentOrder);
  }
  const after = keyset(page.after, 2) as [number, number] | null;
  const rows = await repo.listOrders(db, workspaceId, {
    profileId,
    status: filter.status ?? null,
    after,
    limit: page.limit + 1,
  });
  return toPage(codec, page, rows, (r) => [r.occurred_at.getTime(), r.seq], presentOrder);
}

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

export async function getOrder(db: Db, workspaceId: string, orderId: string): Promise<OrderView> {
  const row = await repo.findOrder(db, workspaceId, orderId);
  if (!row) throw notFound('order');
  return presentOrder(row);
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
