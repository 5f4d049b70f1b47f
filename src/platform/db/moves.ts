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
