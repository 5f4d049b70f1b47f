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
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    // The backlog is what waits (migration 0006): one count, the worker's own.
    const n = await countBacklog(db);
    if (n === 0) return;
    if (Date.now() > deadline) throw new Error(`${n} events still unprocessed after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
