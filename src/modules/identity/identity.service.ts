import type { Queryable } from '../../platform/db';
import { iso } from '../../platform/http/envelope';
import {
  classifyAnonymousId,
  classifyIdentity,
  type Identifier,
  legacyIdentifier,
  normalizeStoredIdentifier,
  suppressionHash,
  suppressionHashes,
} from './identifiers';
import * as repo from './identity.repo';
import * as suppressions from './suppressions.repo';

/**
 * The identity graph as other modules use it: what it says about a profile, suppression and
 * erasure. Profile merges (POST /identity/merge) and the graph endpoint live in the profiles module,
 * which orchestrates profiles and graph together; this module never imports profiles.
 */

export interface GraphNodeView {
  id: string;
  type: string;
  value: string;
  first_seen: string;
  last_seen: string;
}

export interface GraphEdgeView {
  from: string;
  to: string;
  event_id: string | null;
  created_at: string;
}

/** The nodes of a live profile and the edges (evidence) between them, as the graph endpoint shows them. */
export async function readGraphOfProfile(
  q: Queryable,
  workspaceId: string,
  profileId: string,
): Promise<{ nodes: GraphNodeView[]; edges: GraphEdgeView[] }> {
  const [nodes, edges] = await Promise.all([
    repo.listNodesOfProfile(q, workspaceId, profileId),
    repo.listEdgesOfProfile(q, workspaceId, profileId),
  ]);
  return {
    nodes: nodes.map((n) => ({
      id: n.id,
      type: n.type,
      value: n.value,
      first_seen: iso(n.first_seen)!,
      last_seen: iso(n.last_seen)!,
    })),
    edges: edges.map((e) => ({
      from: e.from_node,
      to: e.to_node,
      event_id: e.event_id,
      created_at: iso(e.created_at)!,
    })),
  };
}

/**
 * Whether any of these identifiers of a workspace was erased with suppression (blocked for good:
 * an erasure's horizon only concerns events received before it, never a new write). Each is looked
 * up under every hash it may have been suppressed as (`suppressionHashes`); `legacy` adds what older
 * versions made of the raw values (`legacyIdentifier`).
 */
export async function isSuppressed(
  q: Queryable,
  workspaceId: string,
  identifiers: readonly Identifier[],
  legacy: ReadonlyArray<Identifier | null> = [],
): Promise<boolean> {
  const hashes = new Set(identifiers.flatMap((i) => suppressionHashes(workspaceId, i)));
  for (const l of legacy) if (l) hashes.add(suppressionHash(workspaceId, l));
  const keys = [...hashes].map((hash) => ({ workspace_id: workspaceId, hash }));
  return (await suppressions.findSuppressed(q, keys)).some((s) => s.until_seq === null);
}

/**
 * An erasure puts a hash of each of the person's identifiers on the workspace's block list: for good
 * with ?suppress=true (`untilSeq` null), else up to the erasure's horizon, so that the events received
 * before it and still on their way are dropped rather than bring the person back.
 */
export async function suppressIdentifiers(
  q: Queryable,
  workspaceId: string,
  identifiers: readonly Identifier[],
  untilSeq: number | null,
): Promise<void> {
  // A stored identifier the repair of look-alikes has not reached yet is blocked in its normal form
  // too, which is what every later check looks up.
  const hashes = new Set<string>();
  for (const i of identifiers) {
    hashes.add(suppressionHash(workspaceId, i));
    const normal = normalizeStoredIdentifier(i.type, i.value);
    if (normal) hashes.add(suppressionHash(workspaceId, normal));
  }
  await suppressions.insertSuppressions(q, workspaceId, [...hashes], untilSeq);
}

/**
 * DELETE /tenant/suppressions/{identifier}: the identifier may create a profile again. The value is
 * classified as an event's `identity` would be, and as an `anonymous_id`, so either kind is lifted.
 * Answers whether anything was on the list.
 */
export async function liftSuppression(q: Queryable, workspaceId: string, raw: string): Promise<boolean> {
  // Every spelling the identifier may be on the list as goes with it (suppressionHashes).
  const hashes = [
    ...hashesOf(workspaceId, classifyIdentity(raw), legacyIdentifier(raw, 'identity')),
    ...hashesOf(workspaceId, classifyAnonymousId(raw), legacyIdentifier(raw, 'anonymous_id')),
  ];
  if (hashes.length === 0) return false;
  return (await suppressions.deleteSuppressions(q, workspaceId, hashes)) > 0;
}

const hashesOf = (workspaceId: string, id: Identifier | null, legacy: Identifier | null): string[] =>
  id ? suppressionHashes(workspaceId, id, legacy) : legacy ? [suppressionHash(workspaceId, legacy)] : [];

/** Drops the erasure horizons no waiting event can reach any more (every event up to them is settled). */
export const dropSpentHorizons = (q: Queryable, oldestWaitingSeq: number): Promise<number> =>
  suppressions.deleteHorizonsBelow(q, oldestWaitingSeq);
