import type { Logger } from 'pino';
import { describeError } from '../logger';
import { isStorageUnavailable } from './errors';
import type { Db, Queryable } from './port';

/**
 * The planner's statistics of every table, kept current by the service itself. PGlite has no
 * autovacuum, and a PostgreSQL server may run without it (the CI server does): a table nobody
 * analyzes is planned as the planner's guess of an empty one, and a segment condition on event
 * properties then hashed a whole workspace's index per slice (a 200-profile workspace took seconds
 * to answer what takes tens of milliseconds after one ANALYZE; docs/decisions.md, "Statistics kept
 * by the service").
 *
 * What decides, cheaply: both engines count the rows each table gained, lost or changed since its
 * last ANALYZE (`n_mod_since_analyze`, PostgreSQL's cumulative statistics; PGlite keeps them too, a
 * backend's counts flushed at most once a second). A table is analyzed once that count reaches
 * autovacuum's own threshold, 50 rows plus a tenth of the rows it had at its last ANALYZE, and at
 * most once a minute, as autovacuum would: a fresh workspace's tables after their first tens of
 * rows, a large one after a tenth more. The counters do not survive every restart (PGlite starts
 * with none, and a server loses them in a crash), so growth of the table's file past its size at the
 * last ANALYZE decides too.
 *
 * Every ordinary table of the schema is covered: the list is read from the catalog, not written by
 * hand. A table may be exempted (with the reason) at the composition root (src/statistics.worker.ts);
 * test/statistics.schema.test.ts fails for a table of the schema that is neither.
 */

/**
 * Statistics sample per column (PostgreSQL's default is 100, i.e. 30,000 rows a table). The service
 * needs only the rough size and shape of its tables to choose its plans, and on PGlite an ANALYZE
 * holds the only connection: at the default, five tables of a 200k-event database took 540–820 ms,
 * blocking ingestion meanwhile.
 */
export const STATISTICS_TARGET = 10;

/**
 * When a table is due: `rows + fraction × its rows at the last ANALYZE` changed since (PostgreSQL's
 * autovacuum_analyze_threshold and autovacuum_analyze_scale_factor defaults), or its file grew by
 * `pages + fraction` of its pages at the last ANALYZE (the counters lost in a restart).
 */
export const ANALYZE_THRESHOLD = { rows: 50, fraction: 0.1, pages: 8 } as const;

/**
 * How often a worker process looks for tables that are due: one catalog query of about a
 * millisecond on PGlite (0.1% of its connection; docs/decisions.md). A table's first ANALYZE comes
 * within a second of its first tens of rows: a calculation that starts before it runs with the
 * planner's guesses for its whole statement (with a check every 5 s, one that started as a fresh
 * workspace's 800 events were processed took 37 s on PGlite and 7.9 s on PostgreSQL).
 */
export const STATISTICS_CHECK_MS = 1_000;

/**
 * A table already analyzed is analyzed again at most this long after its last ANALYZE, however
 * fast it grows: autovacuum visits a database once a minute (autovacuum_naptime), so no table of a
 * server is analyzed more often either. The planner scales the row count of the last ANALYZE by the
 * table's size now, so statistics a minute old still plan a table that doubled meanwhile; an ANALYZE
 * per tenth of growth of every growing table cost PGlite 4% of a 200,000-event drain
 * (docs/decisions.md). A table never analyzed (or whose time a restart lost) goes at the next check.
 */
export const REANALYZE_AFTER_MS = 60_000;

/**
 * The ANALYZE time one check may spend before it leaves the rest for the next one (a table already
 * started finishes, and the most overdue one is always analyzed): the time the connection is held,
 * not the wait for it. With the sample above an ANALYZE takes milliseconds to a few hundred, so
 * while many tables are due at once (after a restart of PGlite, every table that grew) the checks
 * hold the connection for about a fifth of the time, the second between them included.
 */
export const STATISTICS_PASS_BUDGET_MS = 250;

/**
 * The file sizes (a stat of each table's file: on PGlite a check of the 41 tables took 2.3 ms with
 * them, 1.2 ms without) are read at the first check of a process and every SIZES_EVERY-th
 * after it, once a minute: they only matter once the counters were lost, which happens at a start.
 */
export const SIZES_EVERY = 60;

/** An ANALYZE may read far more than a request's statement, so it has its own bound on PostgreSQL. */
const ANALYZE_TIMEOUT_MS = 60_000;

export interface TableActivity {
  table: string;
  /** Rows at the last ANALYZE (or VACUUM); -1 if never. */
  reltuples: number;
  /** Pages at the last ANALYZE (or VACUUM). */
  relpages: number;
  /** Pages of the table's file now (`relpages` when sizes were not read). */
  pages: number;
  /** Rows inserted, updated or deleted since the last ANALYZE, as the statistics counters know. */
  changed: number;
  /** Milliseconds since the last ANALYZE the statistics counters know of (null: none, or lost). */
  analyzedAgoMs: number | null;
}

export interface StatisticsExemption {
  table: string;
  reason: string;
}

/**
 * Each ordinary table of the service's schema (or the one named) with its activity since its last
 * ANALYZE: counters and file sizes only. Partitioned parents (relkind 'p') are not here: their
 * counters stay at zero, so they need a rule of their own (the schema test refuses one until then).
 */
const ACTIVITY = `SELECT c.relname AS table, c.reltuples::float8 AS reltuples, c.relpages AS relpages,
         CASE WHEN $2::bool THEN (pg_relation_size(c.oid) / current_setting('block_size')::int)::int
              ELSE c.relpages END AS pages,
         pg_stat_get_mod_since_analyze(c.oid)::int8 AS changed,
         (extract(epoch FROM clock_timestamp() - greatest(pg_stat_get_last_analyze_time(c.oid),
            pg_stat_get_last_autoanalyze_time(c.oid))) * 1000)::float8 AS "analyzedAgoMs"
    FROM pg_class c
   WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'
     AND ($1::text IS NULL OR c.relname = $1)
   ORDER BY c.relname`;

export async function readTableActivity(
  q: Queryable,
  opts: { table?: string; sizes?: boolean } = {},
): Promise<TableActivity[]> {
  const { rows } = await q.query<TableActivity>(ACTIVITY, [opts.table ?? null, opts.sizes ?? true]);
  return rows.map((r) => ({
    table: r.table,
    reltuples: Number(r.reltuples),
    relpages: Number(r.relpages),
    pages: Number(r.pages),
    changed: Number(r.changed),
    analyzedAgoMs: r.analyzedAgoMs === null ? null : Number(r.analyzedAgoMs),
  }));
}

/**
 * How far past its threshold a table is (≥ 1: due). Pure: the rule of ANALYZE_THRESHOLD, the larger
 * of its two signals.
 */
export function overdue(t: TableActivity): number {
  const byChanges =
    t.changed / (ANALYZE_THRESHOLD.rows + ANALYZE_THRESHOLD.fraction * Math.max(t.reltuples, 0));
  const grown = t.pages - t.relpages;
  const byGrowth = grown / (ANALYZE_THRESHOLD.pages + ANALYZE_THRESHOLD.fraction * Math.max(t.relpages, 0));
  return Math.max(byChanges, byGrowth, 0);
}

/** The tables due, most overdue first: past their threshold, and not analyzed in the last minute. */
export function tablesDue(
  activity: readonly TableActivity[],
  opts: { exempt?: readonly StatisticsExemption[]; reanalyzeAfterMs?: number } = {},
): TableActivity[] {
  const skip = new Set((opts.exempt ?? []).map((e) => e.table));
  const after = opts.reanalyzeAfterMs ?? REANALYZE_AFTER_MS;
  return activity
    .filter((t) => !skip.has(t.table) && overdue(t) >= 1 && (t.analyzedAgoMs ?? after) >= after)
    .sort((a, b) => overdue(b) - overdue(a) || a.table.localeCompare(b.table));
}

const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`;

/**
 * Analyzes one table in a short transaction of its own, so other statements interleave between
 * tables, and answers the milliseconds that transaction held its connection (not the wait for it).
 * `ifStillDue`: only if no other process analyzed it meanwhile and none is analyzing it now (an
 * advisory lock per schema and table; the loser answers null at once instead of waiting). Table
 * names come from the catalog or from code, never from input; they are quoted all the same.
 */
export async function analyzeTable(
  db: Db,
  table: string,
  opts: { ifStillDue?: boolean } = {},
): Promise<number | null> {
  // A backend's counts reach the shared statistics at most once a second: flushed now, the writes
  // made just before this ANALYZE are not counted as changes after it (on PGlite, whose one backend
  // makes every write, they were, and the table was due again at once).
  await db.query('SELECT pg_stat_force_next_flush()');
  return db.transaction(async (tx) => {
    const t0 = performance.now();
    if (opts.ifStillDue) {
      const { rows } = await tx.query<{ locked: boolean }>(
        `SELECT pg_try_advisory_xact_lock(hashtextextended('cdp.statistics:' || current_schema() || '.' || $1, 0)) AS locked`,
        [table],
      );
      if (!rows[0]?.locked) return null;
      // Read after the lock: an ANALYZE another process committed before it took it shows here.
      const [now] = await readTableActivity(tx, { table });
      if (!now || overdue(now) < 1) return null;
    }
    await tx.query(`SELECT set_config('default_statistics_target', '${STATISTICS_TARGET}', true)`);
    await tx.query(`ANALYZE ${quoteIdent(table)}`, [], { timeoutMs: ANALYZE_TIMEOUT_MS });
    return performance.now() - t0;
  });
}

/** Refreshes the statistics of these tables unconditionally, one short transaction each (tests, benches). */
export async function analyzeTables(db: Db, tables: readonly string[]): Promise<number[]> {
  const ms: number[] = [];
  for (const t of tables) ms.push((await analyzeTable(db, t)) ?? 0);
  return ms;
}

export interface StatisticsOptions {
  exempt?: readonly StatisticsExemption[];
  /** REANALYZE_AFTER_MS unless set (tests). */
  reanalyzeAfterMs?: number;
  /** STATISTICS_PASS_BUDGET_MS unless set. */
  budgetMs?: number;
}

export interface StatisticsPass {
  /** Tables found due. */
  due: number;
  /** The tables analyzed by this pass, with the milliseconds each held the connection. */
  analyzed: Record<string, number>;
  /** The pass spent its budget before every due table was analyzed: the next one goes on. */
  budgetSpent: boolean;
}

/**
 * One check: reads every table's activity and analyzes those due, most overdue first, until
 * `budgetMs` of ANALYZE time is spent (the most overdue one always: every check makes progress).
 */
export async function refreshStatistics(
  db: Db,
  opts: StatisticsOptions & { sizes?: boolean } = {},
): Promise<StatisticsPass> {
  const due = tablesDue(await readTableActivity(db, { sizes: opts.sizes ?? true }), opts);
  const budget = opts.budgetMs ?? STATISTICS_PASS_BUDGET_MS;
  const analyzed: Record<string, number> = {};
  let spent = 0;
  for (const [i, t] of due.entries()) {
    if (i > 0 && spent >= budget) return { due: due.length, analyzed, budgetSpent: true };
    const ms = await analyzeTable(db, t.table, { ifStillDue: true });
    if (ms !== null) {
      analyzed[t.table] = ms;
      spent += ms;
    }
  }
  return { due: due.length, analyzed, budgetSpent: false };
}

export interface StatisticsUpkeep {
  /** Runs a check now (tests), after the one in progress if any. */
  check(): Promise<StatisticsPass>;
  /** Stops checking; waits for the check in progress. */
  stop(): Promise<void>;
}

/**
 * A check every `intervalMs`, in the background of a worker process: the first one an interval
 * after the start (never in the way of start-up), each after the previous one ended. `db` is the
 * worker lane's: on PGlite, requests go first on the one connection.
 */
export function startStatisticsUpkeep(
  db: Db,
  log: Logger,
  opts: StatisticsOptions & { intervalMs?: number } = {},
): StatisticsUpkeep {
  const { intervalMs = STATISTICS_CHECK_MS, ...passOpts } = opts;
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  /** The check in progress (or the last one): checks never overlap. */
  let last: Promise<unknown> = Promise.resolve();
  let checks = 0;

  const check = (): Promise<StatisticsPass> => {
    const sizes = checks++ % SIZES_EVERY === 0;
    const next = last.then(() => refreshStatistics(db, { ...passOpts, sizes }));
    last = next.catch(() => {});
    return next;
  };

  const tick = async () => {
    timer = null;
    try {
      const r = await check();
      if (Object.keys(r.analyzed).length > 0) {
        log.debug(
          {
            analyzed: Object.fromEntries(Object.entries(r.analyzed).map(([t, ms]) => [t, Math.round(ms)])),
            due: r.due,
            budget_spent: r.budgetSpent,
          },
          'table statistics refreshed',
        );
      }
    } catch (err) {
      // Only an optimisation: the next check tries again. The loops that need the database report an outage.
      if (!stopped && !isStorageUnavailable(err))
        log.warn({ err: describeError(err) }, 'table statistics check failed');
    }
    if (!stopped) schedule();
  };
  const schedule = () => {
    timer = setTimeout(() => void tick(), intervalMs);
    timer.unref();
  };
  schedule();

  return {
    check,
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await last;
    },
  };
}
