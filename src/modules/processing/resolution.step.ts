import { type Settlement, type StepResult, settled } from '../../platform/pipeline';
import { ownersOfOrders } from '../commerce';
import { createGraphBatch, type ProfilesPort, resolveIdentities } from '../identity';
import { countMergedInto, createProfileBatch, lockProfileHeads } from '../profiles';
import { firstMergeAfterOrder } from './ordering';
import type { BatchWork, WorkItem } from './pipeline';
import { loadIdentifiersOf } from './processing.steps';

/** The pipeline's `resolve identities` step (pipeline.ts), and where it ends a batch early. */

/** The identity step's view of the profiles module: its unit of work and its lock. */
function profilesPort(w: BatchWork): ProfilesPort {
  const byEventId = new Map(w.items.map((i) => [i.eventId, i]));
  return {
    async lock(tx, ids) {
      const { rows, complete } = await lockProfileHeads(tx, [...new Set(ids)]);
      const live = new Set(rows.filter((p) => p.merged_into === null).map((p) => p.id));
      // Merged away or erased between the graph read and the lock: read again from scratch.
      if (!complete || ids.some((id) => !live.has(id))) return 'stale';
      w.profiles.addHeads(rows);
      return 'ok';
    },
    loadTraits: (tx, ids) => w.profiles.loadTraits(tx, ids),
    mergedCounts: countMergedInto,
    create: (ws, at, eventId) => w.profiles.createProfile(ws, at, { type: 'event', id: eventId }).id,
    merge(primaryId, secondaryId, eventId) {
      // The graph moved already (later events resolve against it); the profiles' traits combine in
      // the traits step, between the trait writes of the events before and after this one: merging
      // them here would put a later event's merge before an earlier event's appends.
      const item = byEventId.get(eventId)!;
      item.merges = [...(item.merges ?? []), { primary: primaryId, secondary: secondaryId }];
      const source = { type: 'event' as const, id: eventId };
      w.profiles.mergedFact(w.profiles.survivor(primaryId)!.workspaceId, primaryId, [secondaryId], source);
    },
  };
}

/**
 * Resolves the batch; if an event merges a profile that an earlier order event of the batch touched,
 * the batch ends before it (ordering.ts, firstMergeAfterOrder): the units start again, the events
 * before the cut are resolved alone and the rest wait for the next batch, in this transaction
 * (nothing is written before the traits step). Merges of that kind are rare; the cut costs a second
 * resolution of the events kept.
 */
export async function resolveStep(w: BatchWork, live: WorkItem[]): Promise<StepResult> {
  const resolve = (items: WorkItem[]) =>
    resolveIdentities(w.tx, items, w.graph, profilesPort(w), w.ctx.log, w.yieldNow);
  const first = await resolve(live);
  if (first.kind === 'retry') return first;
  const orders = live.filter((i) => i.eventType === 'order' && !first.settled?.has(i.seq));
  if (orders.length === 0 || !live.some((i) => i.merges?.length)) return first;
  const owners = await ownersOfOrders(w.tx, orders);
  const ownerOf = new Map(orders.map((i, n) => [i.seq, owners[n] ?? null]));
  const cut = firstMergeAfterOrder(
    live
      .filter((i) => !first.settled?.has(i.seq))
      .map((i) => ({
        seq: i.seq,
        merges: i.merges ?? [],
        orderProfiles: ownerOf.has(i.seq) ? [i.profileId, ownerOf.get(i.seq)!] : [],
      })),
  );
  if (cut === null) return first;
  w.profiles = createProfileBatch(w.yieldNow);
  w.graph = createGraphBatch();
  for (const i of live) {
    i.profileId = null;
    i.merges = undefined;
  }
  const keep = live.filter((i) => i.seq < cut);
  // A fresh unit knows no identifier: without its nodes, resolution would take every known one for new.
  await loadIdentifiersOf(w, keep);
  const kept = await resolve(keep);
  if (kept.kind === 'retry') return kept;
  return settled([
    ...(kept.settled ?? []),
    ...live.filter((i) => i.seq >= cut).map((i): [number, Settlement] => [i.seq, { kind: 'deferred' }]),
  ]);
}
