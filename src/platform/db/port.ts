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

/**
 * Which kind of work a statement serves, so that no kind can take the database from another:
 * - `foreground`: API requests, whose client waits (ingest's commits, reads, writes, authentication);
 * - `worker`: event processing and the jobs that deliver (webhooks, maintenance);
 * - `analytics`: walks over a whole workspace (segment calculations and refreshes, model fits).
 * PostgreSQL: `analytics` has a pool of its own (a bulkhead), so however much of it one tenant
 * asks for, the others' requests and the workers keep their connections. PGlite: one connection,
 * served foreground first, then worker, then analytics (platform/priority-mutex.ts), so a request
 * waits for at most the statement or transaction in progress and one long-waiting background one.
 */
export type Lane = 'foreground' | 'worker' | 'analytics';

export interface TransactionOptions {
  /**
   * PostgreSQL: the server cancels any statement of this transaction that runs longer (SET LOCAL
   * statement_timeout; the error is classified 'timeout'), so a request over its budget frees its
   * connection and the server's CPU at once instead of holding them until the client gives up.
   * PGlite cannot interrupt a statement: there the caller bounds its work by slicing it.
   */
  statementTimeoutMs?: number;
  /** A request waits for this transaction's answer (Db.interactiveSeenAt). */
  interactive?: boolean;
}

export interface Db extends Queryable {
  readonly engine: Engine;
  /** Runs fn inside BEGIN … COMMIT; any throw rolls back and rethrows. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>, options?: TransactionOptions): Promise<T>;
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
  /** The lane this handle's statements and transactions run in (`foreground` unless chosen). */
  readonly laneName: Lane;
  /** The same database for work of another lane; listen and close are shared. */
  lane(lane: Lane): Db;
  /**
   * performance.now() when this process last started foreground work on this database (a statement
   * or a transaction of the foreground lane), or -Infinity: background loops on PGlite keep their
   * transactions short while requests are being served (processing.worker.ts).
   */
  foregroundSeenAt(): number;
  /**
   * performance.now() when this process last started a transaction marked `interactive` (work a
   * request waits for in a background lane: a calculation's slice), or -Infinity: on PGlite the
   * event pipeline keeps its batches short while one runs, as it does for the foreground, so that
   * the two take turns quickly. Background jobs of the same lane (refreshes, fits) do not count:
   * nobody waits for each of their turns, and short batches cost processing a fifth of its rate.
   */
  interactiveSeenAt(): number;
  close(): Promise<void>;
}

export function isUniqueViolation(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: string }).code === '23505';
}
