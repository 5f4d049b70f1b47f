import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { mergesAfterOrders, partitionByOrder, type Resolved, type Sequenced } from './ordering';

const batch = fc
  .uniqueArray(
    fc.record({
      seq: fc.nat({ max: 200 }),
      tokens: fc.uniqueArray(fc.constantFrom<string>('a', 'b', 'c', 'd', 'e', 'f'), { maxLength: 2 }),
    }),
    { selector: (e) => e.seq, maxLength: 30 },
  )
  .chain((all) =>
    fc.tuple(fc.constant(all), fc.array(fc.boolean(), { minLength: all.length, maxLength: all.length })),
  )
  .map(([all, mineFlags]) => ({
    mine: all.filter((_, i) => mineFlags[i]),
    pending: all.filter((_, i) => !mineFlags[i]),
  }));

describe('ordering across workers', () => {
  it('lets an event through only when no older waiting event shares a token with it', () => {
    const mine = [
      { seq: 1, tokens: ['a'] },
      { seq: 3, tokens: ['b'] },
      { seq: 4, tokens: ['b', 'c'] },
      { seq: 5, tokens: ['c'] },
      { seq: 6, tokens: ['d'] },
    ];
    const { ready, deferred } = partitionByOrder(mine, [
      { seq: 2, tokens: ['b'] },
      { seq: 9, tokens: ['d'] },
    ]);
    expect(ready.map((e) => e.seq)).toEqual([1, 6]);
    expect(deferred.map((e) => e.seq)).toEqual([3, 4, 5]);
  });

  it('waits behind a person an earlier event of the batch linked, though the event shares no token with the waiting one', () => {
    // Another worker holds 1 (device d2); 2 links the e-mail and device d0; 3 names the e-mail and
    // d2, so it waits; 4 names d0 only, the same person as 3 since 2: it waits too.
    const { ready, deferred } = partitionByOrder(
      [
        { seq: 2, tokens: ['email', 'd0'] },
        { seq: 3, tokens: ['email', 'd2'] },
        { seq: 4, tokens: ['d0'] },
        { seq: 5, tokens: ['d9'] },
      ],
      [{ seq: 1, tokens: ['d2'] }],
    );
    expect(ready.map((e) => e.seq)).toEqual([2, 5]);
    expect(deferred.map((e) => e.seq)).toEqual([3, 4]);
  });

  /** Whether a and b are one person by the tokens of the events at or before `upTo` (brute force). */
  const samePerson = (events: readonly Sequenced[], upTo: number, a: Sequenced, b: Sequenced) => {
    const person = new Set(a.tokens);
    for (let grew = true; grew; ) {
      grew = false;
      for (const e of events)
        if (e.seq <= upTo && e.tokens.some((t) => person.has(t)) && e.tokens.some((t) => !person.has(t))) {
          for (const t of e.tokens) person.add(t);
          grew = true;
        }
    }
    return b.tokens.some((t) => person.has(t));
  };

  it('never applies an event while an older event of the same person waits, and never holds anything back without a reason', () => {
    fc.assert(
      fc.property(batch, ({ mine, pending }) => {
        const { ready, deferred } = partitionByOrder(mine, pending);
        expect(ready.length + deferred.length).toBe(mine.length);
        const all = [...mine, ...pending];
        const waiting: Sequenced[] = [...pending, ...deferred];
        for (const r of ready)
          for (const w of waiting) if (w.seq < r.seq) expect(samePerson(all, r.seq, r, w)).toBe(false);
        // An event waits only behind an older waiting event of its person.
        for (const d of deferred)
          expect(waiting.some((w) => w.seq < d.seq && samePerson(all, d.seq, d, w))).toBe(true);
      }),
    );
  });
});

describe('which events of a batch wait so that its order facts keep their place', () => {
  // Tokens are the profiles an event touches (as the pipeline gives them, with its identifiers).
  const order = (
    seq: number,
    profile: string,
    owner: string | null = null,
    extra: string[] = [],
  ): Resolved => ({
    seq,
    merges: [],
    orderProfiles: [profile, owner],
    tokens: [profile, ...(owner ? [owner] : []), ...extra],
  });
  const merge = (seq: number, primary: string, secondary: string): Resolved => ({
    seq,
    merges: [{ primary, secondary }],
    orderProfiles: [],
    tokens: [primary, secondary],
  });
  const page = (seq: number, profile: string): Resolved => ({
    seq,
    merges: [],
    orderProfiles: [],
    tokens: [profile],
  });
  const waits = (events: Resolved[]) => [...mergesAfterOrders(events)].sort((a, b) => a - b);

  it('holds back a merge of a profile an earlier order event touched, and that person’s later events', () => {
    expect(
      waits([order(1, 'guest'), merge(2, 'ann', 'bob'), merge(3, 'ann', 'guest'), page(4, 'ann')]),
    ).toEqual([3, 4]);
    expect(waits([order(1, 'guest'), merge(2, 'guest', 'bob')])).toEqual([2]);
  });

  it('lets other people’s later events through', () => {
    expect(waits([order(1, 'guest'), merge(2, 'ann', 'guest'), page(3, 'cat'), order(4, 'dan')])).toEqual([
      2,
    ]);
  });

  it('holds back a later event of an order the batch created, from another device, behind the waiting merge of its owner', () => {
    // 1 creates o3 for ann (the order is not in the database yet: no owner read); 2 merges ann and
    // waits; 3 completes o3 from bob's device. One at a time its fact names ann's survivor after
    // the merge, so it waits too: o3 makes it ann's person.
    expect(
      waits([
        order(1, 'ann', null, ['order:o3']),
        merge(2, 'ann', 'guest'),
        order(3, 'bob', null, ['order:o3']),
      ]),
    ).toEqual([2, 3]);
  });

  it('lets merges before an order, and merges of other profiles, through', () => {
    expect(waits([merge(1, 'ann', 'guest'), order(2, 'ann'), merge(3, 'bob', 'cat')])).toEqual([]);
  });

  it('counts the profile that already owned the order, followed through earlier merges', () => {
    // The order belonged to "old", merged into "ann" at 1; the device's event completes it at 2.
    expect(waits([merge(1, 'ann', 'old'), order(2, 'device', 'old'), merge(3, 'zed', 'ann')])).toEqual([3]);
  });

  it('checks an order event’s own merges before its order', () => {
    const own: Resolved = {
      seq: 1,
      merges: [{ primary: 'ann', secondary: 'guest' }],
      orderProfiles: ['ann'],
      tokens: ['ann', 'guest'],
    };
    expect(waits([own])).toEqual([]);
  });

  it('agrees with replaying the batch event by event: a merge after a kept order waits, and so does every later event of a waiting event’s person', () => {
    const id = fc.constantFrom('a', 'b', 'c', 'd', 'e');
    const ev = fc.record({
      merges: fc.array(fc.record({ primary: id, secondary: id }), { maxLength: 1 }),
      orderProfiles: fc.oneof(fc.constant([] as Array<string | null>), fc.tuple(id, fc.option(id))),
      extra: fc.array(fc.constantFrom('x', 'y'), { maxLength: 1 }),
    });
    fc.assert(
      fc.property(fc.array(ev, { maxLength: 12 }), (list) => {
        const events: Resolved[] = list.map((e, i) => {
          const merges = e.merges.filter((m) => m.primary !== m.secondary);
          const tokens: string[] = [...merges.flatMap((m) => [m.primary, m.secondary]), ...e.extra];
          for (const p of e.orderProfiles) if (p !== null) tokens.push(p);
          return { seq: i + 1, merges, orderProfiles: e.orderProfiles, tokens };
        });
        // The model: walk the events, keeping lists of what was applied and what waits.
        const owner = new Map<string, string>();
        const liveOf = (x: string): string => (owner.has(x) ? liveOf(owner.get(x)!) : x);
        const touched: string[] = [];
        const waitingTokens: string[] = [];
        const expected: number[] = [];
        for (const e of events) {
          const afterOrder = e.merges.some((m) =>
            touched.some((t) => liveOf(t) === liveOf(m.primary) || liveOf(t) === liveOf(m.secondary)),
          );
          // Its person: its tokens, grown by every event so far that names one of them (brute force).
          const person = new Set(e.tokens);
          for (let grew = true; grew; ) {
            grew = false;
            for (const o of events)
              if (
                o.seq <= e.seq &&
                o.tokens.some((t) => person.has(t)) &&
                o.tokens.some((t) => !person.has(t))
              ) {
                for (const t of o.tokens) person.add(t);
                grew = true;
              }
          }
          if (afterOrder || waitingTokens.some((t) => person.has(t))) {
            expected.push(e.seq);
            waitingTokens.push(...e.tokens);
            continue;
          }
          for (const m of e.merges)
            if (liveOf(m.secondary) !== liveOf(m.primary)) owner.set(liveOf(m.secondary), liveOf(m.primary));
          for (const p of e.orderProfiles) if (p !== null) touched.push(liveOf(p));
        }
        expect(waits(events)).toEqual(expected);
      }),
    );
  });
});
