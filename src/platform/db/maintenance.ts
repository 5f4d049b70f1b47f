import type { Db } from './port';

/**
 * Refreshes the planner's statistics of these tables (one statement each, outside any transaction).
 * Table names come from code, never from input; they are quoted all the same.
 */
export async function analyzeTables(db: Db, tables: readonly string[]): Promise<void> {
  for (const t of tables) await db.query(`ANALYZE "${t.replaceAll('"', '""')}"`);
}
