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

/**
 * Tokens joined into people as events name them together (union-find), and the people who have an
 * event waiting: an event waits when its person does.
 */
function createPeople() {
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
  const waiting = new Set<string>();
  return {
    /** Joins an event's tokens into one person; that person (null for an event without tokens). */
    join(tokens: readonly string[]): string | null {
      if (tokens.length === 0) return null;
      const into = root(tokens[0]!);
      for (const t of tokens.slice(1)) {
        const r = root(t);
        if (r === into) continue;
        parent.set(r, into);
        if (waiting.has(r)) waiting.add(into);
      }
      return into;
    },
    wait(person: string | null): void {
      if (person !== null) waiting.add(person);
    },
    waits: (person: string | null): boolean => person !== null && waiting.has(person),
  };
}

export function partitionByOrder<T extends Sequenced>(
  mine: readonly T[],
  pending: readonly Sequenced[],
): { ready: T[]; deferred: T[] } {
  const people = createPeople();
  const ready: T[] = [];
  const deferred: T[] = [];
  const older = [...pending].sort((a, b) => a.seq - b.seq);
  let pi = 0;
  for (const e of [...mine].sort((a, b) => a.seq - b.seq)) {
    while (pi < older.length && older[pi]!.seq < e.seq) people.wait(people.join(older[pi++]!.tokens));
    if (people.waits(people.join(e.tokens))) deferred.push(e);
    else ready.push(e);
  }
  return { ready, deferred };
}

/** An event of a resolved batch, as the order-fact check reads it. */
export interface Resolved {
  seq: number;
  /** The merges this event caused (profile ids as they were when it was resolved). */
  merges: ReadonlyArray<{ primary: string; secondary: string }>;
  /**
   * For an order event: the profile it was applied to and the profile that already owned its order
   * (null when the order is new); empty for any other event.
   */
  orderProfiles: ReadonlyArray<string | null>;
  /**
   * What the event touches that another person's event cannot: its identifiers, the profiles it
   * was applied to, created or merged, its order (as partitionByOrder's tokens).
   */
  tokens: readonly string[];
}

/**
 * The events of a resolved batch that must wait for the next batch so that its order facts land
 * where one event at a time puts them. The orders step runs after the batch's merges (it needs the
 * profiles written), so an order event followed in the batch by a merge of its profile would be
 * reported about the survivor, after that merge (docs/profiles.md, "Arrival order"). Such a merging
 * event waits, and so does every later event of its person (tokens joined as events name them
 * together, as in partitionByOrder), so one person's events keep their order; the others are
 * applied as resolved, since none of them depends on a waiting one. Profiles are followed through the applied merges, so an order's owner merged
 * into another profile earlier in the batch is known by its survivor.
 */
export function mergesAfterOrders(events: readonly Resolved[]): Set<number> {
  const into = new Map<string, string>();
  const live = (id: string): string => {
    let at = id;
    for (let next = into.get(at); next !== undefined; next = into.get(at)) at = next;
    return at;
  };
  const ordered = new Set<string>();
  const people = createPeople();
  const waiting = new Set<number>();
  for (const e of [...events].sort((a, b) => a.seq - b.seq)) {
    const person = people.join(e.tokens);
    if (
      people.waits(person) ||
      e.merges.some((m) => ordered.has(live(m.primary)) || ordered.has(live(m.secondary)))
    ) {
      waiting.add(e.seq);
      people.wait(person);
      continue;
    }
    for (const m of e.merges) {
      const [from, to] = [live(m.secondary), live(m.primary)];
      if (from !== to) into.set(from, to);
    }
    for (const p of e.orderProfiles) if (p !== null) ordered.add(live(p));
  }
  return waiting;
}
