/**
 * The storage port: the only thing above the repos that knows a database exists. Two adapters
 * implement it (PGlite embedded, PostgreSQL server); everything else is written against this.
 *
 * Conventions both adapters honour, so that SQL behaves identically on both:
 * - int8 and numeric come back as JS numbers (ids and money stay far below 2^53);
 * - timestamptz comes back as a Date;
 * - jsonb parameters are passed as JSON text with an explicit `$n::jsonb` cast.
 */
export interface QueryResult<R> {
  rows: R[];
  rowCount: number;
}

export interface QueryOptions {
  /**
   * How long this statement may go unanswered before the call fails as "storage unavailable"
   * (PostgreSQL; default the configured bound, 5 s). Whole-workspace analytics (a segment count over
   * 1M profiles) take seconds by design and set a longer one. PGlite has no bound to lengthen.
   */
  timeoutMs?: number;
}

export interface Queryable {
  query<R = Record<string, unknown>>(
    sql: string,
    params?: readonly unknown[],
    options?: QueryOptions,
  ): Promise<QueryResult<R>>;
  /** Runs a script of several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
}

export type Engine = 'pglite' | 'postgres';

export interface Db extends Queryable {
  readonly engine: Engine;
  /** Runs fn inside BEGIN … COMMIT; any throw rolls back and rethrows. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  /**
   * Subscribes to a notification channel (LISTEN). On PostgreSQL the handler also receives
   * notifications sent by other processes; `onLost` fires if the listening connection drops, so a
   * cache that relies on notifications can stop trusting itself.
   */
  listen(
    channel: string,
    handler: (payload: string) => void,
    onLost?: () => void,
  ): Promise<() => Promise<void>>;
  /** True while notifications from other processes are known to arrive. */
  readonly listening: boolean;
  close(): Promise<void>;
}

export function isUniqueViolation(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: string }).code === '23505';
}
