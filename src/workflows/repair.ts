import type { Logger } from 'pino';
import { reassignOrders } from '../modules/commerce';
import { markRescoring } from '../modules/intelligence';
import { listMergedAway } from '../modules/profiles';
import { markSegmentWork } from '../modules/segments';
import type { Db } from '../platform/db';
import type { JobRunner } from '../platform/jobs';
import type { Moves } from './merge';

/**
 * Repairs of data that older versions left wrong, run once as jobs (each queued by the migration
 * that shipped it), so that a start never waits for them and `cdp jobs` shows them.
 *
 * `repair.stranded-orders` (migrations/0028): before the merge workflow was one function, a merge
 * made by the event pipeline (a guest signing in) left the merged-away profile's orders on it, so
 * the survivor's total_spend, order list, segments and scores missed them. The repair walks every
 * merged-away profile in pages, moves its orders to its survivor, recomputes both order summaries
 * and marks both profiles for rescoring and segment refresh: what the merge itself does now. Each
 * page is one short transaction, so other work runs between pages; running it again finds nothing.
 */
export const REPAIR_QUEUE = 'repair.stranded-orders';

/** Merged-away profiles read per transaction. */
const PAGE = 1000;

export interface RepairReport {
  /** Orders moved to their profile's survivor. */
  orders: number;
  /** Merged-away profiles that still held orders. */
  profiles: number;
  /** Merged-away profiles looked at. */
  scanned: number;
}

export async function repairStrandedOrders(db: Db, signal?: AbortSignal): Promise<RepairReport> {
  const report: RepairReport = { orders: 0, profiles: 0, scanned: 0 };
  let after = 0;
  for (;;) {
    signal?.throwIfAborted();
    const page = await listMergedAway(db, after, PAGE);
    if (page.length === 0) return report;
    after = page.at(-1)!.seq;
    report.scanned += page.length;
    const byWorkspace = new Map<string, Array<{ from: string; to: string }>>();
    for (const p of page) {
      const list = byWorkspace.get(p.workspace_id) ?? [];
      list.push({ from: p.id, to: p.merged_into });
      byWorkspace.set(p.workspace_id, list);
    }
    await db.transaction(async (tx) => {
      const moved = new Map<string, Array<{ from: string; to: string }>>();
      for (const [ws, moves] of byWorkspace) {
        const r = await reassignOrders(tx, ws, moves);
        report.orders += r.moved;
        report.profiles += r.moves.length;
        if (r.moves.length > 0) moved.set(ws, r.moves);
      }
      const marks: Moves = moved;
      await markRescoring(tx, [], marks);
      await markSegmentWork(tx, { items: [], moves: marks });
    });
  }
}

export function registerRepairJobs(runner: JobRunner, opts: { log: Logger }): void {
  runner.register(
    REPAIR_QUEUE,
    async (_payload, { db, signal }) => {
      const r = await repairStrandedOrders(db, signal);
      opts.log.info(
        { orders_moved: r.orders, merged_profiles: r.profiles, merged_profiles_scanned: r.scanned },
        r.orders > 0
          ? `repair: moved ${r.orders} orders stranded on ${r.profiles} merged-away profiles to their survivors`
          : 'repair: no orders stranded on merged-away profiles',
      );
    },
    // Pages of short transactions: an hour covers tens of millions of merged profiles; if it is cut
    // short it runs again from the start, and what it already moved is no longer stranded.
    { timeoutMs: 3_600_000, lane: 'analytics' },
  );
}
