import { type CursorCodec, type Page, type PageRequest, toPage } from '../../platform/cursor';
import type { Db } from '../../platform/db';
import { notFound } from '../../platform/errors';
import { iso } from '../../platform/http/envelope';
import { type EventView, markEventUnprocessed, presentEvent } from '../ingest';
import * as repo from './processing.repo';

/**
 * Notification channel that wakes the workers at once (a re-queued dead letter sends it). Appends to
 * the event log do not notify: NOTIFY serializes the commits of every notifying transaction on one
 * database-wide lock, which the group-committed ingest path cannot afford (seen in a run: ingest
 * inserts queued on it). Workers poll instead, backing off to 200 ms when idle.
 */
export const EVENTS_CHANNEL = 'cdp_events';

export interface DeadLetterView {
  id: string;
  reason: string;
  attempts: number;
  failed_at: string;
  event: EventView;
}

export async function listDeadLetters(
  db: Db,
  codec: CursorCodec,
  workspaceId: string,
  page: PageRequest,
): Promise<Page<DeadLetterView>> {
  const afterSeq = page.after ? Number(page.after[0]) : null;
  const rows = await repo.listDeadLetters(db, workspaceId, afterSeq, page.limit + 1);
  return toPage(
    codec,
    page,
    rows,
    (r) => [r.seq],
    (r) => ({
      id: r.id,
      reason: r.reason,
      attempts: r.attempts,
      failed_at: iso(r.created_at)!,
      event: presentEvent(r.event),
    }),
  );
}

/** Puts a dead-lettered event back in the stream and wakes the workers. */
export async function requeueDeadLetter(
  db: Db,
  workspaceId: string,
  id: string,
): Promise<{ id: string; event_id: string; requeued: true }> {
  const eventId = await db.transaction(async (tx) => {
    const seq = await repo.deleteDeadLetter(tx, workspaceId, id);
    const eventId = seq === null ? null : await markEventUnprocessed(tx, seq);
    if (seq !== null && eventId) await repo.addToBacklog(tx, seq);
    if (eventId) await repo.notifyWorkers(tx, EVENTS_CHANNEL);
    return eventId;
  });
  if (!eventId) throw notFound('dead letter');
  return { id, event_id: eventId, requeued: true };
}
