import pino from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { dropSchema, freshSchemaName } from '../../../test/harness';
import { ENGINE, onlyOn } from '../../../test/skips';
import { waitUntil } from '../../../test/wait';
import { createPgliteDb } from './pglite';
import type { Db } from './port';
import { createPostgresDb } from './postgres';
import {
  ANALYZE_THRESHOLD,
  analyzeTable,
  analyzeTables,
  overdue,
  REANALYZE_AFTER_MS,
  readTableActivity,
  refreshStatistics,
  startStatisticsUpkeep,
  type TableActivity,
  tablesDue,
} from './statistics';

/**
 * The statistics upkeep on the engine under test, over probe tables in a database of their own (no
 * service runs on it, so nothing else analyzes them).
 */
const url = process.env.DATABASE_URL;
const schema = freshSchemaName();
let db: Db;
beforeAll(async () => {
  db = url
    ? await createPostgresDb({ url, schema })
    : await createPgliteDb({ dataDir: null, inProcess: true });
});
afterAll(async () => {
  await db?.close();
  if (url) await dropSchema(url, schema);
});

let probes = 0;
/** A fresh table with `rows` rows, never analyzed. */
async function probeTable(rows: number): Promise<string> {
  const name = `stat_probe_${++probes}`;
  await db.exec(`CREATE TABLE ${name} (id int PRIMARY KEY, v text)`);
  await insertRows(name, rows);
  return name;
}
async function insertRows(table: string, n: number): Promise<void> {
  if (n === 0) return;
  await db.query(
    `INSERT INTO ${table} SELECT i, 'v' || i FROM generate_series(
       (SELECT coalesce(max(id), 0) + 1 FROM ${table}), (SELECT coalesce(max(id), 0) + $1::int FROM ${table})) i`,
    [n],
  );
}
const activityOf = async (table: string): Promise<TableActivity> =>
  (await readTableActivity(db, { table }))[0]!;
/** The counters reach the shared statistics within a second or so of the writes (both engines). */
const changesSeen = (table: string, n: number) =>
  waitUntil(async () => (await activityOf(table)).changed >= n, {
    what: `${n} changes of ${table} counted`,
    detail: () => activityOf(table),
  });
/** One check, without the minute between two ANALYZEs of a table (its own test says it holds). */
const analyzedTables = async (): Promise<string[]> =>
  Object.keys((await refreshStatistics(db, { reanalyzeAfterMs: 0 })).analyzed);

describe('when a table is due (the rule, pure)', () => {
  const t = (o: Partial<TableActivity>): TableActivity => ({
    table: 't',
    reltuples: -1,
    relpages: 0,
    pages: 0,
    changed: 0,
    analyzedAgoMs: null,
    ...o,
  });

  it('is due after 50 changed rows when it had none, and after 50 plus a tenth of its rows otherwise', () => {
    expect(ANALYZE_THRESHOLD).toMatchObject({ rows: 50, fraction: 0.1 });
    expect(overdue(t({ changed: 49 }))).toBeLessThan(1);
    expect(overdue(t({ changed: 50 }))).toBeGreaterThanOrEqual(1);
    expect(overdue(t({ reltuples: 10_000, changed: 1_049 }))).toBeLessThan(1);
    expect(overdue(t({ reltuples: 10_000, changed: 1_050 }))).toBeGreaterThanOrEqual(1);
  });

  it('is due when its file grew past its size at the last ANALYZE, the counters lost in a restart', () => {
    expect(overdue(t({ reltuples: 10_000, relpages: 100, pages: 117 }))).toBeLessThan(1);
    expect(overdue(t({ reltuples: 10_000, relpages: 100, pages: 118 }))).toBeGreaterThanOrEqual(1);
    expect(overdue(t({ relpages: 0, pages: 8 }))).toBeGreaterThanOrEqual(1);
    // A file that shrank (a VACUUM truncated it) says nothing.
    expect(overdue(t({ reltuples: 10_000, relpages: 100, pages: 50 }))).toBe(0);
  });

  it('lists the most overdue first, and never an exempt table', () => {
    const due = tablesDue(
      [
        t({ table: 'a', changed: 60 }),
        t({ table: 'b', changed: 500 }),
        t({ table: 'c', changed: 10 }),
        t({ table: 'd', changed: 900 }),
      ],
      { exempt: [{ table: 'd', reason: 'a probe of the exemption' }] },
    );
    expect(due.map((d) => d.table)).toEqual(['b', 'a']);
  });

  it('waits a minute after its last ANALYZE before analyzing a table again, however fast it grew', () => {
    expect(REANALYZE_AFTER_MS).toBe(60_000);
    const grown = { reltuples: 1_000, changed: 5_000 };
    expect(tablesDue([t({ ...grown, analyzedAgoMs: 59_000 })])).toEqual([]);
    expect(tablesDue([t({ ...grown, analyzedAgoMs: 60_000 })])).toHaveLength(1);
    // Never analyzed, or the time lost in a restart: at once.
    expect(tablesDue([t({ ...grown, analyzedAgoMs: null })])).toHaveLength(1);
  });
});

describe(`keeping statistics (${ENGINE})`, () => {
  beforeEach(async () => {
    // Whatever earlier tests left due is analyzed first, so that each test sees only its own tables.
    await waitUntil(async () => (await refreshStatistics(db, { reanalyzeAfterMs: 0 })).due === 0, {
      what: 'the tables of earlier tests to be analyzed',
    });
  });

  it('analyzes a table that went from empty to tens of rows at the next check, and then leaves it alone', async () => {
    const table = await probeTable(60);
    expect((await activityOf(table)).reltuples).toBe(-1);
    await changesSeen(table, 60);
    expect(await analyzedTables()).toEqual([table]);
    const after = await activityOf(table);
    expect(after.reltuples).toBe(60);
    expect(after.changed).toBe(0);
    const { rows } = await db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM pg_stats WHERE schemaname = current_schema() AND tablename = $1',
      [table],
    );
    expect(rows[0]!.n).toBe(2);
    expect(await analyzedTables()).toEqual([]);
  });

  it('leaves a table alone below the threshold, and analyzes it again once a tenth more rows changed and a minute passed', async () => {
    const small = await probeTable(ANALYZE_THRESHOLD.rows - 10);
    await changesSeen(small, ANALYZE_THRESHOLD.rows - 10);
    const big = await probeTable(1_000);
    await changesSeen(big, 1_000);
    expect(await analyzedTables()).toEqual([big]);

    await insertRows(big, 140);
    await changesSeen(big, 140);
    expect(await analyzedTables()).toEqual([]);
    await insertRows(big, 10);
    await changesSeen(big, 150);
    // Due now, but analyzed less than a minute ago: the check leaves it for later.
    expect(Object.keys((await refreshStatistics(db)).analyzed)).toEqual([]);
    expect(await analyzedTables()).toEqual([big]);
    expect((await activityOf(big)).reltuples).toBe(1_150);
  });

  it('analyzes a table that grew while its counters were lost (a restart), by the size of its file', async () => {
    const table = await probeTable(1_000);
    await analyzeTables(db, [table]);
    await insertRows(table, 5_000);
    await changesSeen(table, 5_000);
    // What a restart of PGlite (or a server's crash) leaves: the table as it is, no counters.
    await db.query('SELECT pg_stat_reset_single_table_counters($1::regclass)', [table]);
    expect((await activityOf(table)).changed).toBe(0);
    // Sizes are read at one check in SIZES_EVERY: the others see nothing to do.
    expect(
      Object.keys((await refreshStatistics(db, { sizes: false, reanalyzeAfterMs: 0 })).analyzed),
    ).toEqual([]);
    expect(await analyzedTables()).toEqual([table]);
    expect((await activityOf(table)).reltuples).toBe(6_000);
  });

  it('spends at most its budget per check, analyzing the most overdue table first, and the next check goes on', async () => {
    const less = await probeTable(100);
    const more = await probeTable(2_000);
    await changesSeen(less, 100);
    await changesSeen(more, 2_000);
    const first = await refreshStatistics(db, { budgetMs: 0, reanalyzeAfterMs: 0 });
    expect(first).toMatchObject({ due: 2, budgetSpent: true });
    expect(Object.keys(first.analyzed)).toEqual([more]);
    expect(await analyzedTables()).toEqual([less]);
  });

  it('answers null for a table no longer due when its turn comes (another process analyzed it)', async () => {
    const table = await probeTable(100);
    await changesSeen(table, 100);
    expect(await analyzeTable(db, table, { ifStillDue: true })).toBeGreaterThan(0);
    expect(await analyzeTable(db, table, { ifStillDue: true })).toBeNull();
  });

  onlyOn('postgres', 'PGlite is one process').it(
    'leaves a table another process is analyzing to it, without waiting',
    async () => {
      const table = await probeTable(100);
      await changesSeen(table, 100);
      const other = await createPostgresDb({ url: url!, schema });
      let release: () => void = () => {};
      const held = new Promise<void>((r) => {
        release = r;
      });
      let locked: () => void = () => {};
      const isLocked = new Promise<void>((r) => {
        locked = r;
      });
      const holder = other.transaction(async (tx) => {
        await tx.query(
          `SELECT pg_advisory_xact_lock(hashtextextended('cdp.statistics:' || current_schema() || '.' || $1, 0))`,
          [table],
        );
        locked();
        await held;
      });
      try {
        await isLocked;
        expect(await analyzeTable(db, table, { ifStillDue: true })).toBeNull();
      } finally {
        release();
        await holder;
        await other.close();
      }
      expect(await analyzeTable(db, table, { ifStillDue: true })).toBeGreaterThan(0);
    },
  );

  it('checks in the background every interval until stopped', async () => {
    const upkeep = startStatisticsUpkeep(db, pino({ level: 'silent' }), { intervalMs: 50 });
    try {
      const table = await probeTable(80);
      await waitUntil(async () => (await activityOf(table)).reltuples === 80, {
        what: 'the background check to analyze the new table',
        detail: () => activityOf(table),
      });
    } finally {
      await upkeep.stop();
    }
  });
});
