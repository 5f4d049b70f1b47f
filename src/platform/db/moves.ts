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
 * A FROM-list item that finds rows of `table` by one index probe per outer row, whatever the planner
 * believes of the table: `CROSS JOIN LATERAL (SELECT <columns> FROM <table> x WHERE <match> OFFSET 0)
 * <as>`, where `match` names the probed table `x` (e.g. `x.seq = a.seq`). A plain join or an
 * `= ANY(…)` lets the planner, without statistics (autovacuum is off on the CI server, PGlite has
 * none), hash or scan the whole table: at 1M events the log, the identity nodes and the profiles all
 * were, in 40–150 ms per statement (auto_explain, docs/benchmarks.md). OFFSET 0 keeps the lateral
 * subquery from being flattened back into that join. Every statement that looks up a batch's worth
 * of keys goes through here (docs/decisions.md, "Merges move rows through an index probe per move").
 */
export const probeEach = (table: string, match: string, as: string, columns = '*'): string =>
  `CROSS JOIN LATERAL (SELECT ${columns} FROM ${table} x WHERE ${match} OFFSET 0) ${as}`;

/**
 * The FROM item `x(key, to_id)` of a move UPDATE that finds the rows to move through `table`'s index
 * on `column`, one probe per move, whatever the planner believes of the table; the UPDATE then joins
 * `x.key` to the table's primary key `keyColumn` (probeEach; a plain join of the moves to the table
 * was a hash of all of it: at 1M events, 154 ms and 17,666 pages read per merge batch for events,
 * 78 ms for lineage). `filter` narrows the probe (e.g. `AND workspace_id = $1`).
 */
export const movedRowsFrom = (
  n: number,
  table: string,
  keyColumn: string,
  column: string,
  filter = '',
): string =>
  `(SELECT r.k AS key, m.to_id FROM ${movesFrom(n)}
     ${probeEach(table, `x.${column} = m.from_id ${filter}`, 'r', `x.${keyColumn} AS k`)}) AS x`;
