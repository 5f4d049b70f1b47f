/**
 * The one place that classifies database errors: classifyDbError puts each error in the one kind
 * its caller acts on, from the tables below. The `is…` questions are answered from that kind:
 * - isStorageUnavailable: the database could not answer; retry later, never blame the data;
 * - isConflict: the transaction lost a race and was rolled back; run it again at once;
 * - isContention: a conflict, or a lock or unique-key race with another writer;
 * - isDataError: the rows themselves were refused (SQLSTATE classes 22 and 23).
 */

export type DbErrorKind =
  /** The database could not be reached, went away or did not answer in time; the same request may succeed shortly. */
  | 'unavailable'
  /** Serialization failure or deadlock: PostgreSQL rolled back, and the same work may simply run again. */
  | 'conflict'
  /** A lock another writer holds was not available (NOWAIT). */
  | 'contention'
  /** A unique key another row already holds: a race with another writer, and a refusal of the row. */
  | 'duplicate'
  /** Refused because of what some row holds (data exception, integrity constraint violation). */
  | 'data'
  /** Cancelled by the server at its statement_timeout: the work was over its time budget. */
  | 'timeout'
  | 'other';

// Maps, not plain objects: a code such as 'constructor' must not find Object.prototype's.
const entries = (table: Record<string, DbErrorKind>) => new Map(Object.entries(table));

/** Exact codes: SQLSTATEs, the socket errors `pg` passes on, and the mark an adapter may set. */
const BY_CODE: ReadonlyMap<string, DbErrorKind> = entries({
  // An adapter may mark an error it knows is an outage; the robust way, messages are the fallback.
  STORAGE_UNAVAILABLE: 'unavailable',
  '57P01': 'unavailable', // admin shutdown
  '57P02': 'unavailable', // crash shutdown
  '57P03': 'unavailable', // cannot connect now
  ECONNREFUSED: 'unavailable',
  ECONNRESET: 'unavailable',
  ETIMEDOUT: 'unavailable',
  EPIPE: 'unavailable',
  ENOTFOUND: 'unavailable',
  EHOSTUNREACH: 'unavailable',
  ENETUNREACH: 'unavailable',
  EAI_AGAIN: 'unavailable',
  '40001': 'conflict', // serialization failure
  '40P01': 'conflict', // deadlock detected
  '55P03': 'contention', // lock not available
  '23505': 'duplicate', // unique violation
  '57014': 'timeout', // query_canceled: statement_timeout (the only cancel the service sends)
});

/** SQLSTATE classes (the first two characters), for codes not in BY_CODE. */
const BY_CLASS: ReadonlyMap<string, DbErrorKind> = entries({
  '08': 'unavailable', // connection exception
  '53': 'unavailable', // insufficient resources: too many connections, disk full, out of memory
  '22': 'data', // data exception
  '23': 'data', // integrity constraint violation
});

/**
 * Messages of errors that carry no code: `pg`'s own for a lost or timed-out connection or a closed
 * pool, and those of a PGlite instance or thread that is gone. Matched at the start only.
 */
const UNAVAILABLE_MESSAGES = new RegExp(
  [
    'PGlite is closed',
    'database is closed',
    'PGlite thread (exited|failed)',
    'Cannot use a pool after calling end on the pool',
    'Connection terminated',
    'timeout exceeded when trying to connect',
    'Client has encountered a connection error',
    'Client was closed and is not queryable',
    'Query read timeout',
  ]
    .map((m) => `^${m}`)
    .join('|'),
);

/**
 * The kind of a database error: by its code, then its SQLSTATE class, then (for an outage only)
 * its message. An error that looks unavailable either way is 'unavailable' and nothing else: the
 * statement did not fail because of what it asked.
 */
export function classifyDbError(err: unknown): DbErrorKind {
  if (typeof err !== 'object' || err === null) return 'other';
  const { code, message } = err as { code?: unknown; message?: unknown };
  const byCode = typeof code === 'string' ? (BY_CODE.get(code) ?? BY_CLASS.get(code.slice(0, 2))) : undefined;
  if (byCode === 'unavailable') return byCode;
  if (typeof message === 'string' && UNAVAILABLE_MESSAGES.test(message)) return 'unavailable';
  return byCode ?? 'other';
}

const CONTENTION: ReadonlySet<DbErrorKind> = new Set(['conflict', 'contention', 'duplicate']);
const DATA: ReadonlySet<DbErrorKind> = new Set(['data', 'duplicate']);

/**
 * Storage failures, shared by the HTTP error handler (503 UNAVAILABLE with Retry-After instead of
 * 500), the ingest writer and the processing worker (retry forever, never dead-letter).
 */
export function isStorageUnavailable(err: unknown): boolean {
  return classifyDbError(err) === 'unavailable';
}

/**
 * A statement the server cancelled at its time budget (statement_timeout): the request asked for
 * more work than its class may do. Not an outage: the same request would be cancelled again.
 */
export function isStatementTimeout(err: unknown): boolean {
  return classifyDbError(err) === 'timeout';
}

/** Serialization failure and deadlock: PostgreSQL rolled back, and the same work may simply run again. */
export function isConflict(err: unknown): boolean {
  return classifyDbError(err) === 'conflict';
}

/** A conflict, a lock not available (55P03) or a unique-key race with another writer (23505). */
export function isContention(err: unknown): boolean {
  return CONTENTION.has(classifyDbError(err));
}

/** Refused because of what some row holds (data exception, integrity constraint violation). */
export function isDataError(err: unknown): boolean {
  return DATA.has(classifyDbError(err));
}
