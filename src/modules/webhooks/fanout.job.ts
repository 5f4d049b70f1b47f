import type { Db, Queryable } from '../../platform/db';
import { newSortableId } from '../../platform/ids';
import { enqueue } from '../../platform/jobs';
import { type OutboxRow, readOutbox } from '../outbox';
import { insertDeliveries, type NewDelivery } from './deliveries.repo';
import { DELIVER_QUEUE, FANOUT_BATCH, webhookPolicy } from './policy';
import {
  advanceCursor,
  dbNow,
  enabledSubscriptions,
  lockCursor,
  workspacesWithSubscriptions,
} from './webhooks.repo';

/** The body a receiver gets for a fact; stored on the delivery so a re-send sends the same content. */
export function deliveryBody(f: OutboxRow): Record<string, unknown> {
  return {
    id: f.id,
    type: f.type,
    created_at: new Date(f.created_at).toISOString(),
    workspace_id: f.workspace_id,
    data: f.data,
  };
}

/** Enqueues attempt number `attempt` of a delivery (keyed by both, so a duplicate is a no-op). */
export function enqueueAttempt(
  q: Queryable,
  workspaceId: string,
  deliveryId: string,
  attempt: number,
  delayMs = 0,
  /** Sets a manual re-send apart from the planned attempt of the same number. */
  tag = '',
) {
  return enqueue(q, {
    queue: DELIVER_QUEUE,
    key: `${deliveryId}#${tag}${attempt}`,
    workspaceId,
    payload: { delivery_id: deliveryId, attempt },
    delayMs,
    // Retries are planned by the delivery handler itself (so Retry-After can be honoured); a job that
    // dies with its process is still re-run by the runner through its lease.
    maxAttempts: 3,
  });
}

/**
 * One batch of one workspace: reads facts past the cursor, creates a delivery and its job for each
 * matching subscription and advances the cursor, all in one transaction, so each fact fans out
 * exactly once. Returns how many facts were read (FANOUT_BATCH means: maybe more).
 *
 * seq is taken at insert, not at commit: on PostgreSQL a fact of a slow transaction may appear
 * behind a cursor that already passed it. Facts younger than `settleMs` are therefore left for the
 * next run (the batch stops at the first one), which covers every transaction shorter than that.
 */
export async function fanOutBatch(db: Db, workspaceId: string): Promise<number> {
  return db.transaction(async (tx) => {
    const after = await lockCursor(tx, workspaceId);
    const read = await readOutbox(tx, workspaceId, after, FANOUT_BATCH);
    const settledBefore = (await dbNow(tx)).getTime() - webhookPolicy.settleMs;
    const young = read.findIndex((f) => new Date(f.created_at).getTime() > settledBefore);
    const facts = young === -1 ? read : read.slice(0, young);
    if (facts.length === 0) return 0;
    const subs = await enabledSubscriptions(tx, workspaceId);
    const rows: NewDelivery[] = [];
    for (const f of facts) {
      const body = deliveryBody(f);
      for (const s of subs) {
        // A subscription gets facts from its creation on (and only the kinds it chose); the cursor
        // of a workspace starts at 0, so this also keeps a first subscription from replaying history.
        if (!s.events.includes(f.type) || new Date(f.created_at) < new Date(s.created_at)) continue;
        rows.push({
          id: newSortableId('dlv'),
          workspace_id: workspaceId,
          subscription_id: s.id,
          event_id: f.id,
          event_type: f.type,
          body,
        });
      }
    }
    for (const id of await insertDeliveries(tx, rows)) await enqueueAttempt(tx, workspaceId, id, 1);
    await advanceCursor(tx, workspaceId, facts[facts.length - 1]!.seq);
    return young === -1 ? facts.length : 0;
  });
}

/** The scheduled job: every workspace with a subscription, until each is caught up. */
export async function fanOutAll(db: Db, signal: AbortSignal): Promise<void> {
  for (const ws of await workspacesWithSubscriptions(db)) {
    while (!signal.aborted && (await fanOutBatch(db, ws)) === FANOUT_BATCH) {}
  }
}
