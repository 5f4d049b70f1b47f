/**
 * A merge moves rows from merged-away profiles to their survivors in several owners' tables
 * (nodes, lineage, events, orders, merged_into). Each owner writes its own UPDATE; this is the one
 * shape their moves travel in: two uuid arrays unnested side by side, cheaper than a jsonb document.
 */
export interface ProfileMove {
  from: string;
  to: string;
}

/** The FROM item of a move statement whose parameters `$n` and `$n+1` are movesParams(moves). */
export const movesFrom = (n: number): string =>
  `unnest($${n}::uuid[], $${n + 1}::uuid[]) AS m(from_id, to_id)`;

export const movesParams = (moves: readonly ProfileMove[]): [string[], string[]] => [
  moves.map((m) => m.from),
  moves.map((m) => m.to),
];

/**
 * The FROM item `x(key, to_id)` of a move UPDATE that finds the rows to move through `table`'s index
 * on `column`, one probe per move, whatever the planner believes of the table; the UPDATE then joins
 * `x.key` to the table's primary key `keyColumn`. A plain join of the moves to the table let the
 * planner, without statistics (autovacuum is off on the CI server, PGlite has none, and the worker
 * analyzes only the tables it reads by key), hash the whole table: at 1M events, 154 ms and 17,666
 * pages read per merge batch for events, 78 ms for lineage. OFFSET 0 keeps the lateral subquery from
 * being flattened back into that join. `filter` narrows the probe (e.g. `AND workspace_id = $1`).
 */
export const movedRowsFrom = (
  n: number,
  table: string,
  keyColumn: string,
  column: string,
  filter = '',
): string =>
  `(SELECT r.k AS key, m.to_id FROM ${movesFrom(n)}
     CROSS JOIN LATERAL (SELECT ${keyColumn} AS k FROM ${table} WHERE ${column} = m.from_id ${filter} OFFSET 0) r) AS x`;
