import type { Db } from './port';

/**
 * Statistics sample per column (PostgreSQL's default is 100, i.e. 30,000 rows a table). The pipeline
 * needs only the rough size and shape of its tables to choose index probes, and on PGlite an ANALYZE
 * holds the only connection: at the default, five tables of a 200k-event database took 540–820 ms,
 * blocking ingestion meanwhile.
 */
const STATISTICS_TARGET = 10;

/**
 * Refreshes the planner's statistics of these tables, one short transaction per table so other
 * statements interleave between them. Table names come from code, never from input; they are
 * quoted all the same.
 */
export async function analyzeTables(db: Db, tables: readonly string[]): Promise<number[]> {
  const ms: number[] = [];
  for (const t of tables) {
    const t0 = performance.now();
    await db.transaction(async (tx) => {
      await tx.query(`SELECT set_config('default_statistics_target', '${STATISTICS_TARGET}', true)`);
      await tx.query(`ANALYZE "${t.replaceAll('"', '""')}"`);
    });
    ms.push(performance.now() - t0);
  }
  return ms;
}
