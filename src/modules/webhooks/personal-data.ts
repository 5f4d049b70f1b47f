import type { Db } from '../../platform/db';
import { iso } from '../../platform/http/envelope';
import {
  type DataSubject,
  deletingSlice,
  type PersonalDataOwner,
  pagedRows,
} from '../../platform/personal-data';
import { deliveriesAbout, eraseDeliveriesAbout } from './deliveries.repo';

/**
 * The webhook deliveries that carried a person's data: each keeps the body it sent (so a re-send
 * sends the same), found by the profile its fact is about (order_key). An erasure scrubs the body and
 * marks the delivery `erased`: a pending one is never sent, none can be sent again.
 */

const EXPORT_PAGE = 500;

async function* deliveriesOf(db: Db, s: DataSubject): AsyncIterable<unknown> {
  const rows = pagedRows(
    EXPORT_PAGE,
    (after: number | null) => deliveriesAbout(db, s.workspaceId, s.profileIds, after ?? 0, EXPORT_PAGE),
    (last) => last.seq,
  );
  for await (const d of rows) {
    yield {
      id: d.id,
      subscription_id: d.subscription_id,
      event_id: d.event_id,
      event_type: d.event_type,
      status: d.status,
      attempts: d.attempts,
      created_at: iso(d.created_at),
      last_attempt_at: iso(d.last_attempt_at),
      body: d.body,
    };
  }
}

export const webhooksPersonalData: PersonalDataOwner = {
  module: 'webhooks',
  tables: [
    {
      table: 'webhook_deliveries',
      holds: 'the body each delivery sent (a fact about a person), by the profile it is about',
      kept: { setting: 'outbox_days' },
      exported: { section: 'webhook_deliveries' },
    },
  ],
  async erase(tx, s) {
    return { webhook_deliveries: await eraseDeliveriesAbout(tx, s.workspaceId, s.profileIds) };
  },
  slices: [
    deletingSlice('webhook_deliveries', (q, s, limit) =>
      eraseDeliveriesAbout(q, s.workspaceId, s.profileIds, limit),
    ),
  ],
  sections: [{ name: 'webhook_deliveries', rows: deliveriesOf }],
};
