import type { Logger } from 'pino';
import { type Db, isDataError, isStorageUnavailable } from '../../platform/db';
import { AppError } from '../../platform/errors';
import { newSortableId } from '../../platform/ids';
import type { ResolvedKey } from '../api-keys/api-keys.service';
import { type NewEvent, normalizeEvent, storeEventRows } from './append-events';
import { createGroupCommit, GroupCommitRefused, type GroupCommitStats } from './group-commit';
import type * as repo from './ingest.repo';

/**
 * The HTTP routes' way into the log (append-events.ts): the routes validate at the door, the
 * handlers normalise (normalizeEvent), and this writer stores the rows of many concurrent requests
 * with one storeEventRows call per flush (group commit). `write` resolves with the
 * stored event ids only after the rows are committed, so a 202 built on it is never ahead of the
 * database; it rejects with 503 UNAVAILABLE (and Retry-After) if the commit failed.
 */
export interface EventWriter {
  /** Stores the rows of one request atomically; answers one event id per row, in order. */
  write(rows: repo.NewEventRow[]): Promise<string[]>;
  /** Refuses new writes and waits for every accepted one to be committed (or failed). */
  close(): Promise<void>;
  stats(): GroupCommitStats;
}

export interface EventWriterOptions {
  maxInFlight?: number;
  maxBatchRows?: number;
  maxQueuedRows?: number;
  /** Longest a request waits for its flush to start before it is answered 503; default below. */
  maxWaitMs?: number;
}

/**
 * A request waits for its flush to start at most this long. Normally the wait is one commit
 * (milliseconds); it only runs out while flushes hang on an unreachable database, and then the
 * request is answered 503 with Retry-After (nothing was written) instead of waiting with them. A
 * flush itself is bounded by the adapter's connect and statement timeouts (platform/db/postgres.ts).
 */
export const EVENT_WRITER_MAX_WAIT_MS = 5_000;

const unavailable = (why: string) =>
  new AppError('UNAVAILABLE', `${why}; nothing was stored, retry the request`, {
    headers: { 'retry-after': '1' },
  });

export function createEventWriter(db: Db, log: Logger, opts: EventWriterOptions = {}): EventWriter {
  const gc = createGroupCommit<repo.NewEventRow[], string[]>({
    maxInFlight: opts.maxInFlight ?? 2,
    maxBatchWeight: opts.maxBatchRows ?? 5000,
    maxQueuedWeight: opts.maxQueuedRows ?? 100_000,
    weight: (rows) => rows.length,
    maxWaitMs: opts.maxWaitMs ?? EVENT_WRITER_MAX_WAIT_MS,
    async flush(requests) {
      try {
        return await storeEventRows(db, requests);
      } catch (err) {
        // A row the validator let through but the database refuses must not fail its neighbours:
        // retry each request alone so only the culprit fails.
        if (requests.length > 1 && isDataError(err)) {
          log.warn({ err, requests: requests.length }, 'group commit refused by data; retrying one by one');
          const results: Array<string[] | Error> = [];
          for (const rows of requests) {
            try {
              results.push((await storeEventRows(db, [rows]))[0]!);
            } catch (e) {
              log.error({ err: e }, 'event append failed');
              results.push(unavailable('could not store the events'));
            }
          }
          return results;
        }
        if (isStorageUnavailable(err)) {
          // Expected during an outage, once per flush: a line without the stack is enough.
          log.warn(
            { err: String(err), requests: requests.length },
            'event append failed: database unavailable',
          );
        } else {
          log.error({ err, requests: requests.length }, 'event append failed');
        }
        throw unavailable('could not store the events');
      }
    },
  });

  return {
    async write(rows) {
      try {
        return await gc.submit(rows);
      } catch (err) {
        if (err instanceof GroupCommitRefused) {
          throw unavailable(
            err.reason === 'closed'
              ? 'the service is shutting down'
              : err.reason === 'timeout'
                ? 'the database did not answer in time'
                : 'the service is overloaded',
          );
        }
        throw err instanceof AppError ? err : unavailable('could not store the events');
      }
    },
    async close() {
      await gc.close();
      log.info({ ...gc.stats() }, 'event writer drained');
    },
    stats: () => gc.stats(),
  };
}

export async function ingestEvent(
  writer: EventWriter,
  key: ResolvedKey,
  ev: NewEvent,
): Promise<{ status: 'enqueued'; event_id: string }> {
  const src = { workspaceId: key.workspaceId, apiKeyId: key.id, receivedAt: new Date().toISOString() };
  const [id] = await writer.write([normalizeEvent(ev, src)]);
  return { status: 'enqueued', event_id: id! };
}

export async function ingestBatch(
  writer: EventWriter,
  key: ResolvedKey,
  events: NewEvent[],
): Promise<{ status: 'enqueued'; batch_id: string; count: number; event_ids: string[] }> {
  const src = { workspaceId: key.workspaceId, apiKeyId: key.id, receivedAt: new Date().toISOString() };
  const ids = await writer.write(events.map((ev) => normalizeEvent(ev, src)));
  return { status: 'enqueued', batch_id: newSortableId('bat'), count: ids.length, event_ids: ids };
}
