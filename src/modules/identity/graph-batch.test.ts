import { describe, expect, it } from 'vitest';
import { createGraphBatch } from './graph-batch';
import type { Identifier } from './identifiers';

const WS = '00000000-0000-4000-8000-00000000000a';
const anonA: Identifier = { type: 'anonymous_id', value: 'a' };
const anonB: Identifier = { type: 'anonymous_id', value: 'b' };
const email: Identifier = { type: 'email', value: 'ann@example.com' };
const node = (id: Identifier, profileId: string, n: number) => ({
  workspace_id: WS,
  type: id.type,
  value: id.value,
  id: `00000000-0000-4000-8000-00000000000${n}`,
  profile_id: profileId,
});
const key = (id: Identifier) => ({ workspace_id: WS, type: id.type, value: id.value });

/** Two anonymous devices of P1 and an e-mail of P2, read from the database; every view complete. */
function unit() {
  const g = createGraphBatch();
  g.addNodes([node(anonA, 'P1', 1), node(anonB, 'P1', 2), node(email, 'P2', 3)]);
  for (const p of ['P1', 'P2', 'P3', 'P4']) g.created(p);
  return g;
}

describe('the graph unit of work', () => {
  it('gives every identifier of a merged-away profile to the survivor at once', () => {
    const g = unit();
    g.merge(WS, 'P2', 'P1');
    expect([anonA, anonB, email].map((id) => g.ownerOf(WS, id))).toEqual(['P2', 'P2', 'P2']);
    expect(g.owners([anonA, anonB, email].map(key))).toEqual(['P2']);
  });

  it('follows a chain of merges in one batch, and an identifier moved away before a merge stays where it went', () => {
    const g = unit();
    g.attach('P4', WS, anonB, new Date(0));
    g.merge(WS, 'P2', 'P1');
    g.merge(WS, 'P3', 'P2');
    expect(g.ownerOf(WS, anonA)).toBe('P3');
    expect(g.ownerOf(WS, email)).toBe('P3');
    expect(g.ownerOf(WS, anonB)).toBe('P4');
    // A profile that owns nothing any more gives nothing when it is merged.
    g.merge(WS, 'P4', 'P1');
    expect(g.ownerOf(WS, anonA)).toBe('P3');
  });
});
