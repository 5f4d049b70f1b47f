import { type Settlement, type StepResult, settled } from '../../platform/pipeline';
import { ownersOfOrders } from '../commerce';
import { createGraphBatch, identifierKey, type ProfilesPort, resolveIdentities } from '../identity';
import { countMergedInto, createProfileBatch, lockProfileHeads } from '../profiles';
import { mergesAfterOrders } from './ordering';
import type { BatchWork, WorkItem } from './pipeline';
import { loadIdentifiersOf, orderTokens } from './processing.steps';

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
 * that event waits for the next batch, with every later event of its person (identifiers, profiles
 * and orders joined as events name them together; ordering.ts, mergesAfterOrders): the units start again and the other
 * events are resolved without them, in this transaction (nothing is written before the traits step).
 * Their decisions are the same as the first time, since none of them depends on a waiting event.
 * Merges of that kind are rare in a live stream; a backlog of whole journeys meets them more often
 * (docs/benchmarks.md).
 */
export async function resolveStep(w: BatchWork, live: WorkItem[]): Promise<StepResult> {
  const resolve = (items: WorkItem[]) =>
    resolveIdentities(w.tx, items, w.graph, profilesPort(w), w.ctx.log, w.yieldNow);
  const first = await resolve(live);
  if (first.kind === 'retry') return first;
  const resolved = live.filter((i) => !first.settled?.has(i.seq));
  const orders = resolved.filter((i) => i.eventType === 'order');
  if (orders.length === 0 || !resolved.some((i) => i.merges?.length)) return first;
  const owners = await ownersOfOrders(w.tx, orders);
  const ownerOf = new Map(orders.map((i, n) => [i.seq, owners[n] ?? null]));
  const waiting = mergesAfterOrders(
    resolved.map((i) => {
      const orderProfiles = ownerOf.has(i.seq) ? [i.profileId, ownerOf.get(i.seq)!] : [];
      const profiles = [
        ...orderProfiles,
        ...(i.merges ?? []).flatMap((m) => [m.primary, m.secondary]),
      ].filter((p): p is string => p !== null);
      return {
        seq: i.seq,
        merges: i.merges ?? [],
        orderProfiles,
        tokens: [
          ...[i.identity, i.anonymous].flatMap((id) => (id ? [identifierKey(i.workspaceId, id)] : [])),
          ...profiles.map((p) => `profile:${p}`),
          ...(i.profileId ? [`profile:${i.profileId}`] : []),
          ...(i.eventType === 'order' ? orderTokens(i.workspaceId, i.payload.order_id) : []),
        ],
      };
    }),
  );
  if (waiting.size === 0) return first;
  w.profiles = createProfileBatch(w.yieldNow);
  w.graph = createGraphBatch();
  for (const i of live) {
    i.profileId = null;
    i.merges = undefined;
  }
  const keep = live.filter((i) => !waiting.has(i.seq));
  // A fresh unit knows no identifier: without its nodes, resolution would take every known one for new.
  await loadIdentifiersOf(w, keep);
  const kept = await resolve(keep);
  if (kept.kind === 'retry') return kept;
  return settled([
    ...(kept.settled ?? []),
    ...[...waiting].map((seq): [number, Settlement] => [seq, { kind: 'deferred' }]),
  ]);
}
