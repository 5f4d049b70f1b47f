import { type GraphEdgeView, type GraphNodeView, readGraphOfProfile } from '../modules/identity';
import { listMergedIds, readFollowingMerges } from '../modules/profiles';
import type { Db } from '../platform/db';

/** GET /identity/graph/{id}: the identity module's graph of a profile, with the profiles merged into it. */

export interface GraphView {
  profile_id: string;
  nodes: GraphNodeView[];
  edges: GraphEdgeView[];
  merged_profile_ids: string[];
}

export async function getGraph(db: Db, workspaceId: string, id: string): Promise<GraphView> {
  return readFollowingMerges(db, workspaceId, id, async (profileId) => {
    const [graph, merged] = await Promise.all([
      readGraphOfProfile(db, workspaceId, profileId),
      listMergedIds(db, workspaceId, profileId),
    ]);
    return { profile_id: profileId, nodes: graph.nodes, edges: graph.edges, merged_profile_ids: merged };
  });
}
