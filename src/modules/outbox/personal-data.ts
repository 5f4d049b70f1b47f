import type { Db } from '../../platform/db';
import { iso } from '../../platform/http/envelope';
import {
  type DataSubject,
  deletingSlice,
  type PersonalDataOwner,
  pagedRows,
} from '../../platform/personal-data';
import { deleteFactsAbout, readFactsAbout } from './outbox.repo';

/**
 * Facts about a person (profile.created with their profile, order.completed, segment changes, …),
 * written for the webhooks and read once by each consumer. Found by the profile they are about
 * (`factSubject`).
 */

const EXPORT_PAGE = 500;

async function* factsOf(db: Db, s: DataSubject): AsyncIterable<unknown> {
  const rows = pagedRows(
    EXPORT_PAGE,
    (after: number | null) => readFactsAbout(db, s.workspaceId, s.profileIds, after ?? 0, EXPORT_PAGE),
    (last) => last.seq,
  );
  for await (const f of rows) yield { id: f.id, type: f.type, created_at: iso(f.created_at), data: f.data };
}

export const outboxPersonalData: PersonalDataOwner = {
  module: 'outbox',
  tables: [
    {
      table: 'outbox',
      holds:
        'facts about a person (their profile as a change left it, orders, segment changes), by the profile they are about',
      kept: { setting: 'outbox_days' },
      exported: { section: 'facts' },
    },
  ],
  async erase(tx, s) {
    return { outbox: await deleteFactsAbout(tx, s.workspaceId, s.profileIds) };
  },
  slices: [deletingSlice('outbox', (q, s, limit) => deleteFactsAbout(q, s.workspaceId, s.profileIds, limit))],
  sections: [{ name: 'facts', rows: factsOf }],
};
