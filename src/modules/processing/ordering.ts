/**
 * Per-person ordering across concurrent workers, pure. A worker holding a batch may apply an event
 * only if no older event of the same person is still waiting elsewhere (held by another worker, or
 * released by one). "Same person" is approximated by tokens: the event's identifiers and the profiles
 * that currently own them; an order event also carries its order, so one order's events keep their
 * order whichever devices sent them. An event that must wait makes every later event of this batch sharing one
 * of its tokens wait too, so a person's events are never reordered.
 */
export interface Sequenced {
  seq: number;
  /** Identifier keys and owning profile ids of the event (and its order, for an order event). */
  tokens: readonly string[];
}

export function partitionByOrder<T extends Sequenced>(
  mine: readonly T[],
  pending: readonly Sequenced[],
): { ready: T[]; deferred: T[] } {
  const blocked = new Set<string>();
  const ready: T[] = [];
  const deferred: T[] = [];
  const older = [...pending].sort((a, b) => a.seq - b.seq);
  let pi = 0;
  for (const e of [...mine].sort((a, b) => a.seq - b.seq)) {
    while (pi < older.length && older[pi]!.seq < e.seq) for (const t of older[pi++]!.tokens) blocked.add(t);
    if (e.tokens.some((t) => blocked.has(t))) {
      for (const t of e.tokens) blocked.add(t);
      deferred.push(e);
    } else ready.push(e);
  }
  return { ready, deferred };
}
