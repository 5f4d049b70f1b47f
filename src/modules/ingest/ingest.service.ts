import type { Logger } from 'pino';
import { type Db, isDataError, isStorageUnavailable } from '../../platform/db';
import { AppError } from '../../platform/errors';
import { newSortableId } from '../../platform/ids';
import type { ResolvedKey } from '../api-keys/api-keys.service';
import { createGroupCommit, GroupCommitRefused, type GroupCommitStats } from './group-commit';
import * as repo from './ingest.repo';
import type { IngestEvent } from './ingest.schemas';

/**
 * The durable append path shared by every ingest request of this process. `write` resolves with the
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

const messageKey = (workspaceId: string, messageId: string) => `${workspaceId} ${messageId}`;

/**
 * Writes the rows of several requests with one INSERT and resolves each request's ids.
 * A message_id seen twice (in this flush or already stored) maps every copy to the one stored id.
 */
export async function storeRequests(db: Db, requests: repo.NewEventRow[][]): Promise<string[][]> {
  const unique: repo.NewEventRow[] = [];
  const firstByKey = new Map<string, repo.NewEventRow>();
  for (const rows of requests) {
    for (const row of rows) {
      if (row.message_id === null) unique.push(row);
      else {
        const k = messageKey(row.workspace_id, row.message_id);
        if (!firstByKey.has(k)) {
          firstByKey.set(k, row);
          unique.push(row);
        }
      }
    }
  }

  const storedId = new Map<string, string>();
  let toInsert = unique;
  // A conflicting original can vanish before it is read back (a profile erasure deletes its
  // events); the re-sent copy is then inserted on the next pass. Three passes end any such race.
  for (let pass = 0; pass < 3 && toInsert.length > 0; pass++) {
    const inserted = await repo.insertEvents(db, toInsert);
    const withKey = toInsert.filter((r) => r.message_id !== null);
    if (inserted === toInsert.length || withKey.length === 0) {
      for (const r of withKey) storedId.set(messageKey(r.workspace_id, r.message_id!), r.id);
      toInsert = [];
      break;
    }
    const found = await repo.findEventIdsByMessageId(
      db,
      withKey.map((r) => ({ workspace_id: r.workspace_id, message_id: r.message_id! })),
    );
    for (const f of found) storedId.set(messageKey(f.workspace_id, f.message_id), f.id);
    toInsert = withKey.filter((r) => !storedId.has(messageKey(r.workspace_id, r.message_id!)));
  }
  if (toInsert.length > 0) throw new Error('message_id de-duplication did not settle after 3 passes');

  return requests.map((rows) =>
    rows.map((r) => (r.message_id === null ? r.id : storedId.get(messageKey(r.workspace_id, r.message_id))!)),
  );
}

export function createEventWriter(db: Db, log: Logger, opts: EventWriterOptions = {}): EventWriter {
  const gc = createGroupCommit<repo.NewEventRow[], string[]>({
    maxInFlight: opts.maxInFlight ?? 2,
    maxBatchWeight: opts.maxBatchRows ?? 5000,
    maxQueuedWeight: opts.maxQueuedRows ?? 100_000,
    weight: (rows) => rows.length,
    maxWaitMs: opts.maxWaitMs ?? EVENT_WRITER_MAX_WAIT_MS,
    async flush(requests) {
      try {
        return await storeRequests(db, requests);
      } catch (err) {
        // A row the validator let through but the database refuses must not fail its neighbours:
        // retry each request alone so only the culprit fails.
        if (requests.length > 1 && isDataError(err)) {
          log.warn({ err, requests: requests.length }, 'group commit refused by data; retrying one by one');
          const results: Array<string[] | Error> = [];
          for (const rows of requests) {
            try {
              results.push((await storeRequests(db, [rows]))[0]!);
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

/** Defaults the contract gives order events, made explicit so every reader of the log sees them. */
function withOrderDefaults(payload: Record<string, unknown>): Record<string, unknown> {
  const currency = typeof payload.currency === 'string' ? payload.currency.toUpperCase() : 'USD';
  return { ...payload, currency, status: payload.status ?? 'completed' };
}

/** A validated event → the row to append. `receivedAt` stands in for a missing `timestamp`. */
export function toEventRow(ev: IngestEvent, key: ResolvedKey, receivedAt: string): repo.NewEventRow {
  const payload = ev.payload ?? {};
  return {
    id: newSortableId('evt'),
    workspace_id: key.workspaceId,
    message_id: ev.message_id ?? null,
    event_type: ev.event_type,
    event_name: ev.event_name,
    // UUIDs compare case-insensitively; one spelling keeps one identity node per cookie.
    anonymous_id: ev.anonymous_id?.toLowerCase() ?? null,
    identity: ev.identity ?? null,
    payload: ev.event_type === 'order' ? withOrderDefaults(payload) : payload,
    occurred_at: ev.timestamp ? new Date(ev.timestamp).toISOString() : receivedAt,
    received_at: receivedAt,
    api_key_id: key.id,
  };
}

export async function ingestEvent(
  writer: EventWriter,
  key: ResolvedKey,
  ev: IngestEvent,
): Promise<{ status: 'enqueued'; event_id: string }> {
  const [id] = await writer.write([toEventRow(ev, key, new Date().toISOString())]);
  return { status: 'enqueued', event_id: id! };
}

export async function ingestBatch(
  writer: EventWriter,
  key: ResolvedKey,
  events: IngestEvent[],
): Promise<{ status: 'enqueued'; batch_id: string; count: number; event_ids: string[] }> {
  const receivedAt = new Date().toISOString();
  const ids = await writer.write(events.map((ev) => toEventRow(ev, key, receivedAt)));
  return { status: 'enqueued', batch_id: newSortableId('bat'), count: ids.length, event_ids: ids };
}
