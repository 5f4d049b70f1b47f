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

/**
 * For the rest of the current transaction: no nested loops, so a statement that joins a grouped
 * pass over a whole table to another whole table (a segment's count over a workspace, strategy
 * `set`) hashes each side once. Without statistics every estimate falls to one row, and the planner
 * joined each of 400 profiles to the grouped pass by re-running it: the whole workspace's events read
 * once per profile (241 s for the plan test's shapes, against about a second hashed). Sub-plans run
 * per row (a correlated probe) are not joins and keep their index descents. Outside a transaction it
 * does nothing.
 */
export async function preferHashJoins(q: Queryable): Promise<void> {
  await q.query("SELECT set_config('enable_nestloop', 'off', true)");
}
