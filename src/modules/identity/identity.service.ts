import type { Queryable } from '../../platform/db';
import { iso } from '../../platform/http/envelope';
import { type Identifier, suppressionHash } from './identifiers';
import * as repo from './identity.repo';

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

/** Whether any of these identifiers of a workspace was erased with suppression. */
export async function isSuppressed(
  q: Queryable,
  workspaceId: string,
  identifiers: readonly Identifier[],
): Promise<boolean> {
  const keys = identifiers.map((i) => ({ workspace_id: workspaceId, hash: suppressionHash(workspaceId, i) }));
  return (await repo.findSuppressed(q, keys)).length > 0;
}

/**
 * Erasure with ?suppress=true: a hash of each identifier of the profile goes on the workspace's
 * block list (before the nodes themselves are erased).
 */
export async function suppressIdentifiersOfProfile(
  q: Queryable,
  workspaceId: string,
  profileId: string,
): Promise<void> {
  const nodes = await repo.listNodesOfProfile(q, workspaceId, profileId);
  await repo.insertSuppressions(
    q,
    workspaceId,
    nodes.map((n) => suppressionHash(workspaceId, n)),
  );
}

/** Erasure: the identifier nodes of these profiles and their edges; returns how many nodes went. */
export function eraseIdentityOfProfiles(
  q: Queryable,
  workspaceId: string,
  profileIds: readonly string[],
): Promise<number> {
  return repo.deleteNodesOfProfiles(q, workspaceId, profileIds);
}
