import type { Queryable } from '../../platform/db';
import { iso } from '../../platform/http/envelope';
import { isUuid } from '../../platform/ids';
import { type NormalizedOrder, type OrderItem, productsOf, readOrderId, readOrderPayload } from '../ingest';
import { type OutboxFact, writeOutboxMany } from '../outbox';
import { getProfileSummaries, type ProfileSummary, storeOrderSummary } from '../profiles';
import * as ordersRepo from './orders.repo';
import * as productsRepo from './products.repo';

/**
 * Order events, applied by the processing worker inside its transaction (orders, products,
 * total_spend and the order.completed fact commit with the event), and the order side of merges.
 */

export interface OrderEvent {
  workspaceId: string;
  /** The resolved (surviving) profile the event was applied to. */
  profileId: string;
  eventId: string;
  occurredAt: Date;
  payload: Record<string, unknown>;
  /**
   * The event's seq in the log: of two mentions of a product at the same event time, the later in
   * the log wins (docs/commerce.md, "Products"). Absent for an order applied outside the log (0).
   */
  seq?: number;
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
 * - New orders upsert their items' products, field by field the newest mention (productsRepo.upsertProductsFromOrders).
 */
export function applyOrderEvent(tx: Queryable, e: OrderEvent): Promise<OrderOutcome> {
  return applyOne(tx, e, (fact) => writeOutboxMany(tx, [fact]).then(() => undefined));
}

/** Where an applied order event's `order.completed` fact goes: the outbox now, or a batch's list. */
type FactSink = (fact: OutboxFact) => Promise<void> | void;

async function applyOne(tx: Queryable, e: OrderEvent, sink: FactSink): Promise<OrderOutcome> {
  const order = readOrderPayload(e.payload);
  if (order === null) return 'ignored';

  const [created] = await ordersRepo.insertOrdersIfNew(tx, [newOrder(e, order)]);
  if (created) {
    const mark = { at: e.occurredAt, seq: e.seq ?? 0 };
    await productsRepo.upsertProductsFromOrders(
      tx,
      e.workspaceId,
      productsOf(order.items).map((item) => productsRepo.mentionOf(item, order.currency, mark)),
    );
    if (created.status === 'completed') await sink(await orderCompleted(tx, e.workspaceId, created));
    return 'created';
  }

  const existing = await ordersRepo.lockOrder(tx, e.workspaceId, order.orderId);
  if (!existing) return 'ignored'; // deleted with its workspace meanwhile
  if (existing.status === order.status) return 'unchanged';
  if (e.occurredAt.getTime() < existing.status_at.getTime()) return 'stale';

  const updated = await ordersRepo.updateOrderStatus(
    tx,
    e.workspaceId,
    order.orderId,
    order.status,
    e.occurredAt,
  );
  const wasCompleted = existing.status === 'completed';
  const isCompleted = updated.status === 'completed';
  if (isCompleted && existing.completed_at === null) {
    await sink(await orderCompleted(tx, e.workspaceId, updated));
  } else if (wasCompleted !== isCompleted && updated.profile_id !== null) {
    await recomputeOrderSummary(tx, e.workspaceId, [updated.profile_id]);
  }
  return 'updated';
}

/**
 * applyOrderEvent for a whole batch, in the worker's transaction, with the same rules and outcomes
 * (one per event, in order). New orders, by far the common case, are written with a handful of
 * statements for the batch instead of five round trips each: one multi-row insert, one products
 * upsert per workspace (each product once, its mentions folded so each field keeps the newest
 * mention's value, as the upsert itself decides against the row), one
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

  const created = await ordersRepo.insertOrdersIfNew(
    tx,
    [...firsts.values()].map(({ index, order }) => newOrder(events[index]!, order)),
  );
  const createdByKey = new Map(created.map((row) => [`${row.workspace_id}|${row.order_id}`, row]));
  const productsByWorkspace = new Map<string, Map<string, productsRepo.ObservedProduct>>();
  const completed: Array<ordersRepo.OrderRow & { workspace_id: string }> = [];
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
    const products =
      productsByWorkspace.get(e.workspaceId) ?? new Map<string, productsRepo.ObservedProduct>();
    productsByWorkspace.set(e.workspaceId, products);
    for (const item of productsOf(order.items)) {
      const mention = productsRepo.mentionOf(item, order.currency, { at: e.occurredAt, seq: e.seq ?? 0 });
      const seen = products.get(item.product_id);
      products.set(item.product_id, seen ? productsRepo.foldObservations(seen, mention) : mention);
    }
  }
  for (const [workspaceId, products] of productsByWorkspace) {
    await productsRepo.upsertProductsFromOrders(tx, workspaceId, [...products.values()]);
  }
  const spenders = new Map<string, Set<string>>();
  for (const o of completed) {
    if (o.profile_id === null) continue;
    const ids = spenders.get(o.workspace_id) ?? new Set<string>();
    spenders.set(o.workspace_id, ids.add(o.profile_id));
  }
  const who = new Map<string, ProfileSummary>();
  for (const [workspaceId, ids] of spenders) {
    await recomputeOrderSummary(tx, workspaceId, [...ids]);
    for (const [id, summary] of await getProfileSummaries(tx, workspaceId, [...ids])) who.set(id, summary);
  }
  // The facts go out in the order of their events, as one event at a time writes them: a new
  // order's fact and an existing order's completion interleave by event, not new ones first.
  const facts: Array<{ index: number; fact: OutboxFact }> = completed.map((o) => ({
    index: firsts.get(`${o.workspace_id}|${o.order_id}`)!.index,
    fact: {
      workspaceId: o.workspace_id,
      type: 'order.completed',
      data: completedFact(o, o.profile_id === null ? null : (who.get(o.profile_id) ?? null)),
    },
  }));
  for (const index of [...existing, ...later].sort((a, b) => a - b)) {
    outcomes[index] = await applyOne(tx, events[index]!, (fact) => {
      facts.push({ index, fact });
    });
  }
  await writeOutboxMany(
    tx,
    facts.sort((a, b) => a.index - b.index).map((f) => f.fact),
  );
  return outcomes;
}

/**
 * The profile that owns each event's order already, in event order (null: no order_id, or the
 * order is new). The pipeline uses it to keep an order's fact before a later merge of its owner.
 */
export async function ownersOfOrders(
  tx: Queryable,
  events: ReadonlyArray<{ workspaceId: string; payload: Record<string, unknown> }>,
): Promise<Array<string | null>> {
  const ids = events.map((e) => readOrderId(e.payload.order_id));
  const owners = await ordersRepo.findOrderOwners(
    tx,
    events.flatMap((e, i) => (ids[i] === null ? [] : [{ workspaceId: e.workspaceId, orderId: ids[i]! }])),
  );
  return events.map((e, i) => (ids[i] === null ? null : (owners.get(`${e.workspaceId}|${ids[i]}`) ?? null)));
}

/** The order an event creates if its order_id is new: everything but the status is fixed then. */
const newOrder = (e: OrderEvent, order: NormalizedOrder): ordersRepo.NewOrder => ({
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
async function orderCompleted(
  tx: Queryable,
  workspaceId: string,
  o: ordersRepo.OrderRow,
): Promise<OutboxFact> {
  let who: ProfileSummary | null = null;
  if (o.profile_id !== null) {
    await recomputeOrderSummary(tx, workspaceId, [o.profile_id]);
    who = (await getProfileSummaries(tx, workspaceId, [o.profile_id])).get(o.profile_id) ?? null;
  }
  return { workspaceId, type: 'order.completed', data: completedFact(o, who) };
}

/**
 * Line items carried by an order.completed fact, as JSON: an order's items may reach 500 (about
 * 350 KB at the field limits); past this, the fact carries the first items that fit and counts the
 * rest (docs/webhooks.md, "Size").
 */
export const FACT_ITEMS_BYTES = 32 * 1024;

export function boundedItems(items: readonly OrderItem[]): { items: OrderItem[]; items_omitted: number } {
  let bytes = 2;
  const kept: OrderItem[] = [];
  for (const item of items) {
    bytes += Buffer.byteLength(JSON.stringify(item)) + 1;
    if (bytes > FACT_ITEMS_BYTES) break;
    kept.push(item);
  }
  return { items: kept, items_omitted: items.length - kept.length };
}

const completedFact = (o: ordersRepo.OrderRow, who: ProfileSummary | null): Record<string, unknown> => ({
  order_id: o.order_id,
  profile_id: o.profile_id,
  status: o.status,
  total: o.total,
  currency: o.currency,
  ...boundedItems(o.items),
  occurred_at: iso(o.occurred_at),
  event_id: o.event_id,
  profile: who,
});

/**
 * Profile merge support: the orders of merged-away profiles now belong to their survivors, whose
 * order summaries are recomputed (and the merged-away profiles' drop to 0). Runs in the merge's
 * transaction; a worker batch passes all its merges at once (two statements however many, one when
 * none of the merged-away profiles had orders). Answers how many orders moved and the moves that
 * moved any (for the caller's report; the merge workflow marks every merged pair anyway).
 */
export async function reassignOrders(
  tx: Queryable,
  workspaceId: string,
  moves: ReadonlyArray<{ from: string; to: string }>,
): Promise<{ moved: number; moves: Array<{ from: string; to: string }> }> {
  const byFrom = new Map<string, string>();
  for (const m of moves) if (m.from !== m.to && isUuid(m.from)) byFrom.set(m.from, m.to);
  if (byFrom.size === 0) return { moved: 0, moves: [] };
  const moved = await ordersRepo.moveOrders(
    tx,
    workspaceId,
    [...byFrom].map(([from, to]) => ({ from, to })),
  );
  const pairs = new Map(moved.map((m) => [m.from, m]));
  const touched = [...new Set(moved.flatMap((m) => [m.from, m.to]))];
  if (touched.length > 0) await recomputeOrderSummary(tx, workspaceId, touched);
  return { moved: moved.length, moves: [...pairs.values()] };
}

/**
 * Sets each profile's total_spend to the exact numeric sum of its completed orders, and the summary
 * beside it (how many, first and last placed: migration 0021, read by segment conditions).
 * Recomputed rather than adjusted by deltas, so no sequence of status changes can make it drift.
 * Commerce sums its orders; the profiles module stores the result (the columns are on its table).
 */
export async function recomputeOrderSummary(
  tx: Queryable,
  workspaceId: string,
  profileIds: readonly string[],
): Promise<void> {
  if (profileIds.length === 0) return;
  await storeOrderSummary(
    tx,
    workspaceId,
    await ordersRepo.summarizeCompletedOrders(tx, workspaceId, profileIds),
  );
}
