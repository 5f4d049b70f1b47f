/**
 * What the main thread (pglite-worker.ts) and the PGlite thread (pglite-thread.ts) say to each
 * other. Kept apart from both: importing pglite-thread would run it.
 *
 * Messages in:  { id, op: 'query', sql, params, lease?, priority? } · { id, op: 'exec', sql, lease?, priority? }
 *               { id, op: 'begin', priority? } → lease id · { id, op: 'end', lease, commit }
 *               { id, op: 'listen', channel } · { id, op: 'close' }
 * Messages out: { ready } once open · { id, ok: true, value } · { id, ok: false, error }
 *               · { notify, payload }
 */

export interface ThreadData {
  dataDir: string | null;
  /** A dump a new database starts from (PgliteOptions.template). */
  template: string | null;
}

/** A statement's or transaction's place in the connection's queue (platform/priority-mutex.ts). */
export type Priority = 0 | 1 | 2;

export type Request =
  | {
      id: number;
      op: 'query';
      sql: string;
      params: readonly unknown[] | undefined;
      lease?: number;
      priority?: Priority;
    }
  | { id: number; op: 'exec'; sql: string; lease?: number; priority?: Priority }
  | { id: number; op: 'begin'; priority?: Priority }
  | { id: number; op: 'end'; lease: number; commit: boolean }
  | { id: number; op: 'listen'; channel: string }
  | { id: number; op: 'close' };

export type Reply =
  | { ready: true }
  | { id: number; ok: true; value: unknown }
  | { id: number; ok: false; error: SerializedDbError }
  | { notify: string; payload: string };

/** The child-process flag (`<entry> cdp-pglite-init DIR`); distinctive, so loading the thread file elsewhere does nothing. */
export const INIT_FLAG = 'cdp-pglite-init';

/** The PostgreSQL error fields a caller may look at (classifyDbError reads `code`). */
const ERROR_FIELDS = [
  'code',
  'severity',
  'detail',
  'hint',
  'position',
  'schema',
  'table',
  'column',
  'dataType',
  'constraint',
  'routine',
] as const;

export interface SerializedDbError {
  message: string;
  fields: Partial<Record<(typeof ERROR_FIELDS)[number], string>>;
}

/** Flattens a database error for postMessage (a structured clone keeps only an Error's message). */
export function serializeDbError(err: unknown): SerializedDbError {
  const e = err as Record<string, unknown> | null;
  const fields: SerializedDbError['fields'] = {};
  for (const f of ERROR_FIELDS) if (typeof e?.[f] === 'string') fields[f] = e[f] as string;
  return { message: err instanceof Error ? err.message : String(err), fields };
}

export function deserializeDbError(s: SerializedDbError): Error {
  const err = new Error(s.message);
  err.name = 'DatabaseError';
  Object.assign(err, s.fields);
  return err;
}
