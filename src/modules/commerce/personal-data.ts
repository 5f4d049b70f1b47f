import type { Db } from '../../platform/db';
import { type DataSubject, type PersonalDataOwner, pagedRows } from '../../platform/personal-data';
import * as repo from './orders.repo';
import { presentOrder } from './orders.service';

/**
 * Orders are the shop's books: an erasure keeps them (totals, items, times) and removes the link to
 * the person (docs/profiles.md, "Erasure"); nothing else in an order names them. Products name no one.
 */

const EXPORT_PAGE = 500;

async function* ordersOf(db: Db, s: DataSubject): AsyncIterable<unknown> {
  for (const profileId of s.profileIds) {
    const rows = pagedRows(
      EXPORT_PAGE,
      (after: [number, number] | null) =>
        repo.listOrders(db, s.workspaceId, { profileId, status: null, after, limit: EXPORT_PAGE }),
      (last) => [last.occurred_at.getTime(), last.seq] as [number, number],
    );
    for await (const r of rows) yield presentOrder(r);
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
