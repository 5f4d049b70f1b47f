import type { Logger } from 'pino';
import type { Queryable } from '../../platform/db';
import { type Settlement, type StepResult, settled } from '../../platform/pipeline';
import { readOrder } from '../ingest';
import { applyOrderEvents } from './order-events';

/**
 * The pipeline's orders step: order events become orders and products, and completed ones count
 * towards their profile's spend (docs/commerce.md). An order that cannot be recorded (a payload
 * that reached the log by another road than the ingest rules) is never dropped silently: the event
 * still counts for its profile, and a dead letter says why its order is missing.
 */

export interface OrderStepEvent {
  seq: number;
  eventId: string;
  eventType: string;
  workspaceId: string;
  payload: Record<string, unknown>;
  at: Date;
  /** The live profile the event was applied to. */
  profileId: string | null;
}

export async function applyOrders(
  tx: Queryable,
  events: readonly OrderStepEvent[],
  log: Logger,
): Promise<StepResult> {
  const orders = events.filter((e) => e.eventType === 'order' && e.profileId !== null);
  if (orders.length === 0) return settled([]);
  const outcomes = await applyOrderEvents(
    tx,
    orders.map((e) => ({
      workspaceId: e.workspaceId,
      profileId: e.profileId!,
      eventId: e.eventId,
      occurredAt: e.at,
      payload: e.payload,
      seq: e.seq,
    })),
  );
  const out: Array<[number, Settlement]> = [];
  outcomes.forEach((result, i) => {
    if (result !== 'ignored') return;
    const e = orders[i]!;
    const read = readOrder(e.payload);
    if (!('problem' in read)) return; // the order's workspace was deleted meanwhile
    log.warn({ event_id: e.eventId, problem: read.problem }, 'order not recorded: unusable order payload');
    out.push([
      e.seq,
      { kind: 'dead_letter', reason: `order not recorded: ${read.problem}`, keepProfile: true },
    ]);
  });
  return settled(out);
}
