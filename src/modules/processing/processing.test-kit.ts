import { waitUntil } from '../../../test/wait';
import type { Db } from '../../platform/db';
import { appendEvents } from '../ingest';
import { countBacklog } from './processing.repo';

/** Test helpers: events appended to the log as the ingest path appends them, and waiting for the worker. */
export interface TestEvent {
  anonymous_id?: string;
  identity?: string;
  event_type: 'track' | 'page' | 'identify' | 'order';
  event_name: string;
  payload?: Record<string, unknown>;
  /** Event time (ISO); defaults to now. */
  at?: string;
  message_id?: string;
}

/**
 * Appends the events in one statement through the ingest module's appendEvents (normalisation and
 * message_id de-duplication as for ingested events) and answers their ids in order. `unchecked`
 * skips the ingest rules: for tests of the worker's defences against rows the door would refuse.
 */
export async function insertTestEvents(
  db: Db,
  workspaceId: string,
  events: readonly TestEvent[],
  opts: { unchecked?: boolean } = {},
): Promise<string[]> {
  const { ids } = await appendEvents(
    db,
    events.map(({ at, ...e }) => ({ ...e, timestamp: at ?? new Date().toISOString() })),
    { workspaceId, validate: opts.unchecked !== true },
  );
  return ids;
}

/** Resolves once no event is waiting (processed, dead-lettered or dropped); fails after `timeoutMs`. */
export async function waitProcessed(db: Db, timeoutMs = 20_000): Promise<void> {
  // The backlog is what waits (migration 0006): one count, the worker's own.
  let left = 0;
  await waitUntil(
    async () => {
      left = await countBacklog(db);
      return left === 0;
    },
    {
      what: 'every event to be processed',
      timeoutMs,
      detail: () => `${left} events still on the backlog`,
    },
  );
}
