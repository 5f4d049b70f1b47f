/**
 * Per-person ordering across concurrent workers, pure. A worker holding a batch may apply an event
 * only if no older event of the same person is still waiting elsewhere (held by another worker, or
 * released by one). "Same person" is approximated by tokens: the event's identifiers and the profiles
 * that currently own them; an order event also carries its order and the order's owner, so one
 * order's events keep their order whichever devices sent them. An event joins its tokens into one
 * person, so an earlier event of the batch that links two identifiers (an identify naming a device
 * and an e-mail) makes a later event of either the same person as a waiting event of the other.
 * An event that must wait makes every later event of its person wait too, so a person's events are
 * never reordered.
 */
export interface Sequenced {
  seq: number;
  /** Identifier keys and owning profile ids of the event (and its order and owner, for an order event). */
  tokens: readonly string[];
}

export function partitionByOrder<T extends Sequenced>(
  mine: readonly T[],
  pending: readonly Sequenced[],
): { ready: T[]; deferred: T[] } {
  // Tokens joined into people (union-find), and the people with an older event waiting.
  const parent = new Map<string, string>();
  const root = (t: string): string => {
    let r = t;
    for (let p = parent.get(r); p !== undefined; p = parent.get(r)) r = p;
    // Path compression: every token on the way points at the root.
    for (let at = t; at !== r; ) {
      const next = parent.get(at)!;
      parent.set(at, r);
      at = next;
    }
    return r;
  };
  const blocked = new Set<string>();
  /** Joins an event's tokens into one person; that person's root. */
  const join = (tokens: readonly string[]): string | null => {
    if (tokens.length === 0) return null;
    let into = root(tokens[0]!);
    for (const t of tokens.slice(1)) {
      const r = root(t);
      if (r === into) continue;
      parent.set(r, into);
      if (blocked.has(r)) blocked.add(into);
    }
    into = root(into);
    return into;
  };
  const ready: T[] = [];
  const deferred: T[] = [];
  const older = [...pending].sort((a, b) => a.seq - b.seq);
  let pi = 0;
  for (const e of [...mine].sort((a, b) => a.seq - b.seq)) {
    while (pi < older.length && older[pi]!.seq < e.seq) {
      const person = join(older[pi++]!.tokens);
      if (person !== null) blocked.add(person);
    }
    const person = join(e.tokens);
    if (person !== null && blocked.has(person)) deferred.push(e);
    else ready.push(e);
  }
  return { ready, deferred };
}

/** An event of a resolved batch, as the order-fact cut reads it. */
export interface Resolved {
  seq: number;
  /** The merges this event caused (profile ids as they were when it was resolved). */
  merges: ReadonlyArray<{ primary: string; secondary: string }>;
  /**
   * For an order event: the profile it was applied to and the profile that already owned its order
   * (null when the order is new); empty for any other event.
   */
  orderProfiles: ReadonlyArray<string | null>;
}

/**
 * Where a batch must end so that its order facts land where one event at a time puts them: before
 * the first event that merges a profile an earlier order event of the batch touched. The orders step
 * runs after the batch's merges (it needs the profiles written), so such an order would otherwise
 * be reported about the survivor, after a merge that came later (docs/profiles.md, "Arrival
 * order"). Null when no event must wait. Profiles are followed through the batch's merges, so an
 * order's owner merged into another profile earlier in the batch is known by its survivor.
 */
export function firstMergeAfterOrder(events: readonly Resolved[]): number | null {
  const into = new Map<string, string>();
  const live = (id: string): string => {
    let at = id;
    for (let next = into.get(at); next !== undefined; next = into.get(at)) at = next;
    return at;
  };
  const ordered = new Set<string>();
  for (const e of [...events].sort((a, b) => a.seq - b.seq)) {
    for (const m of e.merges) {
      if (ordered.has(live(m.primary)) || ordered.has(live(m.secondary))) return e.seq;
      const [from, to] = [live(m.secondary), live(m.primary)];
      if (from !== to) into.set(from, to);
    }
    for (const p of e.orderProfiles) if (p !== null) ordered.add(live(p));
  }
  return null;
}
