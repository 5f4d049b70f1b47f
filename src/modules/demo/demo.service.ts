import type { Db } from '../../platform/db';
import { newSortableId } from '../../platform/ids';
import { type DemoEvent, type DemoOptions, generateDemoEvents } from './demo.generator';
import * as repo from './demo.repo';

export const DEMO_BATCH_ROWS = 1000;

export interface DemoLoadSummary {
  workspace_id: string;
  customers: number;
  /** Events in the dataset. */
  events: number;
  /** Events newly stored (a dataset loaded before is not stored twice). */
  stored: number;
  orders: number;
}

/**
 * Streams the dataset into the event log in 1000-row statements, each committed on its own: the
 * events are then processed like any ingested event, by a running worker or on the next start.
 * Memory stays flat whatever the customer count (one batch at a time).
 */
export async function loadDemoDataset(
  db: Db,
  workspaceId: string,
  opts: DemoOptions,
  onProgress?: (s: DemoLoadSummary) => void,
): Promise<DemoLoadSummary> {
  const summary: DemoLoadSummary = {
    workspace_id: workspaceId,
    customers: opts.customers,
    events: 0,
    stored: 0,
    orders: 0,
  };
  let batch: Array<{ id: string; event: DemoEvent }> = [];
  const flush = async () => {
    summary.stored += await repo.insertEvents(db, workspaceId, batch);
    batch = [];
    onProgress?.(summary);
  };
  for (const event of generateDemoEvents(opts)) {
    summary.events++;
    if (event.event_type === 'order' && event.payload.status === 'completed') summary.orders++;
    batch.push({ id: newSortableId('evt'), event });
    if (batch.length >= DEMO_BATCH_ROWS) await flush();
  }
  if (batch.length > 0) await flush();
  return summary;
}
