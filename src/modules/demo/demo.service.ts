import type { Db } from '../../platform/db';
import { appendEvents } from '../ingest';
import { type DemoEvent, type DemoOptions, generateDemoEvents } from './demo.generator';

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
 * Streams the dataset into the event log through the ingest module's appendEvents, in 1000-event
 * calls each committed on its own: the events are validated and normalised exactly like ingested
 * ones (no API key: their lineage source is the event), a message_id already stored is skipped (so
 * loading a dataset twice stores it once), and they are then processed by a running worker or on
 * the next start. Memory stays flat whatever the customer count (one batch at a time).
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
  let batch: DemoEvent[] = [];
  const flush = async () => {
    const { ids, duplicates } = await appendEvents(db, batch, { workspaceId });
    summary.stored += ids.length - duplicates;
    batch = [];
    onProgress?.(summary);
  };
  for (const event of generateDemoEvents(opts)) {
    summary.events++;
    if (event.event_type === 'order' && event.payload.status === 'completed') summary.orders++;
    batch.push(event);
    if (batch.length >= DEMO_BATCH_ROWS) await flush();
  }
  if (batch.length > 0) await flush();
  return summary;
}
