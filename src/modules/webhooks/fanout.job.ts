import type { Db, Queryable } from '../../platform/db';
import { newSortableId } from '../../platform/ids';
import { enqueue } from '../../platform/jobs';
import { factSubject, type OutboxRow, readOutbox } from '../outbox';
import { type ConsentDefaultOf, consentFor, consentPermits } from './consent';
import { lockCursor, saveCursor } from './cursor.repo';
import { insertDeliveries, type NewDelivery } from './deliveries.repo';
import { DELIVER_QUEUE, FANOUT_BATCH } from './policy';
import { subscriptionWants } from './subscription-filter';
import { enabledSubscriptions, workspacesWithSubscriptions } from './webhooks.repo';

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
  /** The request that asked for this attempt (a manual re-send): the attempt sends and records its id. */
  requestId?: string,
) {
  return enqueue(q, {
    queue: DELIVER_QUEUE,
    key: `${deliveryId}#${tag}${attempt}`,
    workspaceId,
    payload: { delivery_id: deliveryId, attempt, ...(requestId ? { request_id: requestId } : {}) },
    delayMs,
    // Retries are planned by the delivery handler itself (so Retry-After can be honoured); a job that
    // dies with its process is still re-run by the runner through its lease.
    maxAttempts: 3,
  });
}

export interface FanOutOptions {
  /** The workspace's consent default, for subscriptions that name consent categories. */
  consentDefault: ConsentDefaultOf;
}

export interface FanOutResult {
  /** Facts read (FANOUT_BATCH means: maybe more). */
  facts: number;
  /** Deliveries created (their first attempts are queued). */
  deliveries: number;
}

/**
 * One batch of one workspace: reads facts past the cursor, creates a delivery and its job for each
 * matching subscription and advances the cursor, all in one transaction, so each fact fans out
 * exactly once. The outbox is read by snapshot (readOutbox), so a fact whose transaction commits
 * late is read late, never passed over.
 */
export async function fanOutBatch(db: Db, workspaceId: string, opts: FanOutOptions): Promise<FanOutResult> {
  return db.transaction(async (tx) => {
    const read = await readOutbox(tx, workspaceId, await lockCursor(tx, workspaceId), FANOUT_BATCH);
    await saveCursor(tx, workspaceId, read.cursor);
    const { facts } = read;
    if (facts.length === 0) return { facts: 0, deliveries: 0 };
    const subs = await enabledSubscriptions(tx, workspaceId);
    // Read under the cursor's lock, which a consent withdrawal also takes (consent.ts).
    const subjects = facts.map((f) => factSubject(f.data));
    const consent = await consentFor(tx, workspaceId, subs, subjects, opts.consentDefault);
    const rows: NewDelivery[] = [];
    for (const [i, f] of facts.entries()) {
      const body = deliveryBody(f);
      for (const s of subs) {
        // A subscription gets facts from its creation on (and only the kinds and segments it chose): a
        // workspace's first one starts the cursor at the outbox's end (createWebhook), a later one may
        // find the cursor behind its creation.
        if (!subscriptionWants(s, f) || new Date(f.created_at) < new Date(s.created_at)) continue;
        if (!consentPermits(s, subjects[i]!, consent.states, consent.defaultGranted)) continue;
        rows.push({
          id: newSortableId('dlv'),
          workspace_id: workspaceId,
          subscription_id: s.id,
          event_id: f.id,
          event_type: f.type,
          body,
          order_key: subjects[i]!,
        });
      }
    }
    const created = await insertDeliveries(tx, rows);
    for (const id of created) await enqueueAttempt(tx, workspaceId, id, 1);
    return { facts: facts.length, deliveries: created.length };
  });
}

/** Fans a workspace's outbox out until it is caught up. Answers the deliveries created. */
export async function fanOutWorkspace(
  db: Db,
  workspaceId: string,
  opts: FanOutOptions,
  signal?: AbortSignal,
): Promise<number> {
  let deliveries = 0;
  for (;;) {
    const r = await fanOutBatch(db, workspaceId, opts);
    deliveries += r.deliveries;
    if (r.facts < FANOUT_BATCH || signal?.aborted) return deliveries;
  }
}

/**
 * The scheduled job: every workspace with a subscription, until each is caught up. The safety net
 * under the pump (fanout.pump.ts), which does this on every commit that wrote facts.
 */
export async function fanOutAll(db: Db, signal: AbortSignal, opts: FanOutOptions): Promise<void> {
  for (const ws of await workspacesWithSubscriptions(db)) {
    if (signal.aborted) return;
    await fanOutWorkspace(db, ws, opts, signal);
  }
}
