import type { Queryable } from '../../platform/db';
import { reassignOrders } from '../commerce';
import type { GraphBatch } from '../identity';
import { writeOutboxMany } from '../outbox';
import { type ProfileBatch, StaleReadError } from './profile-batch';

/**
 * Writes an API change (a profile write, a merge) made in a profile batch and a graph batch, with
 * the effects on the other owners, in the caller's transaction: the profiles (and their lineage and
 * events moved by merges), the graph, the merged-away profiles' orders, then the facts. Throws
 * StaleReadError when another writer created one of the new identifiers meanwhile (withRetry).
 */
export async function flushUnit(tx: Queryable, profiles: ProfileBatch, graph: GraphBatch): Promise<void> {
  const liveId = (id: string) => profiles.survivor(id)?.id ?? id;
  await profiles.flush(tx);
  if ((await graph.flush(tx, liveId)) === 'stale') {
    throw new StaleReadError('an identifier was linked by another writer meanwhile');
  }
  for (const [workspaceId, moves] of profiles.moves()) await reassignOrders(tx, workspaceId, moves);
  await writeOutboxMany(tx, profiles.facts);
}
