import type { Db } from '../../platform/db';
import type { DataSubject, PersonalDataOwner } from '../../platform/personal-data';
import * as repo from './orders.repo';
import { presentOrder } from './orders.service';

/**
 * Orders are the shop's books: an erasure keeps them (totals, items, times) and removes the link to
 * the person (docs/profiles.md, "Erasure"); nothing else in an order names them. Products name no one.
 */

const EXPORT_PAGE = 500;

async function* ordersOf(db: Db, s: DataSubject): AsyncIterable<unknown> {
  for (const profileId of s.profileIds) {
    let after: [number, number] | null = null;
    for (;;) {
      const rows: repo.OrderRow[] = await repo.listOrders(db, s.workspaceId, {
        profileId,
        status: null,
        after,
        limit: EXPORT_PAGE,
      });
      for (const r of rows) yield presentOrder(r);
      if (rows.length < EXPORT_PAGE) break;
      const last = rows.at(-1)!;
      after = [last.occurred_at.getTime(), last.seq];
    }
  }
}

export const commercePersonalData: PersonalDataOwner = {
  module: 'commerce',
  tables: [
    {
      table: 'orders',
      holds:
        "a person's orders, linked by profile id (the items and totals are the shop's, not the person's)",
      kept: { as: 'for good, as the books; the link to the person goes with an erasure' },
      exported: { section: 'orders' },
    },
  ],
  async erase(tx, s) {
    return { orders: await repo.unlinkOrdersOfProfiles(tx, s.workspaceId, s.profileIds) };
  },
  sections: [{ name: 'orders', rows: ordersOf }],
};
