/**
 * The one place that classifies database errors. Callers ask the question they act on:
 * - isStorageUnavailable: the database could not answer; retry later, never blame the data;
 * - isConflict: the transaction lost a race and was rolled back; run it again at once;
 * - isContention: a conflict, or a lock or unique-key race with another writer;
 * - isDataError: the rows themselves were refused (SQLSTATE classes 22 and 23).
 */

const sqlstate = (err: unknown): string | null => {
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  return typeof code === 'string' ? code : null;
};

/** Serialization failure and deadlock: PostgreSQL rolled back, and the same work may simply run again. */
export function isConflict(err: unknown): boolean {
  const code = sqlstate(err);
  return code === '40001' || code === '40P01';
}

/** A conflict, a lock not available (55P03) or a unique-key race with another writer (23505). */
export function isContention(err: unknown): boolean {
  const code = sqlstate(err);
  return isConflict(err) || code === '55P03' || code === '23505';
}

/** Refused because of what some row holds (data exception, integrity constraint violation). */
export function isDataError(err: unknown): boolean {
  const code = sqlstate(err);
  return code !== null && (code.startsWith('22') || code.startsWith('23'));
}

/**
 * Storage failures, shared by the HTTP error handler (503 UNAVAILABLE with
 * Retry-After instead of 500), the ingest writer and the processing worker (retry forever, never
 * dead-letter). "Unavailable" means the statement did not fail because of what it asked: the
 * database could not be reached, went away, or did not answer in time, and the same request may
 * succeed shortly.
 *
 * - PostgreSQL SQLSTATE class 08 (connection exception), 57P01–57P03 (admin shutdown, crash
 *   shutdown, cannot connect now), class 53 (insufficient resources: too many connections, disk
 *   full, out of memory);
 * - socket errors from `pg` (refused, reset, timed out, unreachable);
 * - `pg`'s own messages for a lost or timed-out connection, a closed pool, a PGlite instance or
 *   thread that is gone (messages are the fallback; an adapter may instead mark an error with
 *   `code: 'STORAGE_UNAVAILABLE'`, which is the robust way).
 */
export function isStorageUnavailable(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const { code, message } = err as { code?: unknown; message?: unknown };
  if (typeof code === 'string') {
    if (code === 'STORAGE_UNAVAILABLE') return true;
    if (code.startsWith('08') || code.startsWith('53') || /^57P0[123]$/.test(code)) return true;
    if (SOCKET_CODES.has(code)) return true;
  }
  return typeof message === 'string' && STORAGE_DOWN_MESSAGES.test(message);
}

const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);

const STORAGE_DOWN_MESSAGES = new RegExp(
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
