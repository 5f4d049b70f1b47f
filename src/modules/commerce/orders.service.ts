import { type CursorCodec, type Page, type PageRequest, toPage } from '../../platform/cursor';
import type { Db } from '../../platform/db';
import { notFound } from '../../platform/errors';
import { iso } from '../../platform/http/envelope';
import type { OrderItem } from '../ingest';
import { findLiveProfileId } from '../profiles';
import { keyset } from './keyset';
import * as repo from './orders.repo';

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

export const presentOrder = (r: repo.OrderRow): OrderView => ({
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

export async function listOrders(
  db: Db,
  codec: CursorCodec,
  workspaceId: string,
  page: PageRequest,
  filter: { profile_id?: string | undefined; status?: string | undefined },
): Promise<Page<OrderView>> {
  let profileId: string | null = null;
  if (filter.profile_id !== undefined) {
    // A merged-away id lists its survivor's orders.
    profileId = await findLiveProfileId(db, workspaceId, filter.profile_id);
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

export async function getOrder(db: Db, workspaceId: string, orderId: string): Promise<OrderView> {
  const row = await repo.findOrder(db, workspaceId, orderId);
  if (!row) throw notFound('order');
  return presentOrder(row);
}
