import { randomUUID } from 'node:crypto';
import { waitUntil } from '../../../test/wait';
import type { Db } from '../../platform/db';
import type { Transaction } from './models';

/** Test helpers: order histories loaded straight into profiles and orders (fast), and waiting for rescoring. */

/**
 * Creates one profile per customer and one completed order per transaction (in one statement each);
 * answers the profile id of every customer key.
 */
export async function loadOrders<K>(
  db: Db,
  workspaceId: string,
  histories: ReadonlyMap<K, readonly Transaction[]>,
): Promise<Map<K, string>> {
  const ids = new Map<K, string>();
  const orders: Array<{ order_id: string; profile_id: string; total: number; occurred_at: string }> = [];
  for (const [key, txs] of histories) {
    const id = randomUUID();
    ids.set(key, id);
    for (const t of txs) {
      orders.push({
        order_id: `o-${randomUUID()}`,
        profile_id: id,
        total: t.amount,
        occurred_at: new Date(t.at).toISOString(),
      });
    }
  }
  await db.query(`INSERT INTO profiles (id, workspace_id) SELECT id, $1 FROM unnest($2::uuid[]) AS u(id)`, [
    workspaceId,
    [...ids.values()],
  ]);
  await db.query(
    `INSERT INTO orders (workspace_id, order_id, profile_id, status, total, currency, occurred_at, event_id,
            status_at, completed_at)
     SELECT $1, o.order_id, o.profile_id, 'completed', o.total, 'USD', o.occurred_at, 'evt_test', o.occurred_at,
            o.occurred_at
       FROM jsonb_to_recordset($2::jsonb) AS o(order_id text, profile_id uuid, total numeric, occurred_at timestamptz)`,
    [workspaceId, JSON.stringify(orders)],
  );
  return ids;
}

/** Day n of 2025 (UTC midnight). */
export const day2025 = (n: number) => new Date(Date.UTC(2025, 0, 1) + n * 86_400_000);

/**
 * Two customers of 2025, too few for any model (the fallbacks fit): `a` bought on days 0 and 20,
 * `b` on day 5.
 */
export function loadTwoCustomers(db: Db, workspaceId: string): Promise<Map<'a' | 'b', string>> {
  return loadOrders(
    db,
    workspaceId,
    new Map([
      [
        'a' as const,
        [
          { at: day2025(0), amount: 10 },
          { at: day2025(20), amount: 30 },
        ],
      ],
      ['b' as const, [{ at: day2025(5), amount: 50 }]],
    ]),
  );
}

/** Resolves once nothing waits for rescoring and no score job is queued or running; fails after timeoutMs. */
export async function waitRescored(db: Db, timeoutMs = 10_000): Promise<number> {
  const t0 = Date.now();
  await waitUntil(
    async () => {
      const { rows } = await db.query<{ n: number }>(
        `SELECT (SELECT count(*) FROM event_backlog)
            + (SELECT count(*) FROM intelligence_dirty_profiles)
            + (SELECT count(*) FROM jobs WHERE queue IN ('intelligence.score', 'intelligence.fit')
                 AND state IN ('queued', 'running') AND run_at <= now() AND payload ? 'workspace_id'
                 AND key NOT LIKE '%:next') AS n`,
      );
      return Number(rows[0]!.n) === 0;
    },
    { what: 'rescoring to finish', timeoutMs },
  );
  return Date.now() - t0;
}
