import type { Queryable } from './port';

/**
 * For the rest of the current transaction: no sorts where an index gives the order, so a statement
 * that reads a few rows in an index's order (`… ORDER BY <indexed time> LIMIT n`) walks the index and
 * stops after them. Without statistics on the table (PGlite never analyses; a PostgreSQL without
 * autovacuum, or a table that grew since its last ANALYZE) the planner guesses a few hundred matching
 * rows and prefers a bitmap scan of every one, then a sort: 260 ms instead of 0.4 ms for the oldest
 * 2,000 of 450,000 rows (measured on PostgreSQL 15), and each batch of a walk over a large backlog
 * costs as much again. (Switching bitmap scans off instead made the same statement's delete by a
 * list of keys a sequential scan: 52 s.) Outside a transaction it does nothing.
 */
export async function preferIndexOrder(q: Queryable): Promise<void> {
  await q.query("SELECT set_config('enable_sort', 'off', true)");
}
