import { OK, type StepResult, settled } from '../../platform/pipeline';
import { ownersOfOrders } from '../commerce';
import {
  classifyAnonymousId,
  classifyIdentity,
  type Identifier,
  type IdentifierType,
  identifierKey,
  junkSetFromSettings,
  orderingTokens,
} from '../identity';
import { type AppliedEvent, deleteEventsBySeq, markEventsApplied, readOrderId } from '../ingest';
import { findSurvivors } from '../profiles';
import { loadSettings, settingsOf } from './batch-settings';
import { partitionByOrder } from './ordering';
import type { BatchWork, WorkItem } from './pipeline';
import * as repo from './processing.repo';

/** The processing module's own steps: the order guard and the processed marks. */

/**
 * Per-person and per-order order across workers (ordering.ts): tokens are identifiers, their owning
 * profiles and, for an order event, its order and the profile that owns it. Two devices nobody
 * linked are two people to the guard, yet an order's first event must be applied before its next
 * (docs/commerce.md: the first creates the order for good), so the order id is a token of its own;
 * and an order's fact names its owner as it is when applied, so the owner is one too.
 */
export async function guardOrder(w: BatchWork, live: WorkItem[]): Promise<StepResult> {
  if (w.ctx.soleClaimer) {
    // Resolution still needs the batch's own identifiers.
    await loadIdentifiersOf(w, live);
    return OK;
  }
  const maxSeq = live[live.length - 1]!.seq;
  const waiting = await repo.findPendingBefore(
    w.tx,
    maxSeq,
    w.items.map((i) => i.seq),
    5000,
  );
  if (waiting.length === 0) {
    // Nothing older waits: nothing to compare with.
    await loadIdentifiersOf(w, live);
    return OK;
  }
  // Their identifiers are classified as their own workspace's settings say, as classify will.
  await loadSettings(
    w,
    waiting.map((p) => p.workspace_id),
  );
  const pending = waiting.map((p) => {
    const junk = junkSetFromSettings(settingsOf(w, p.workspace_id));
    return {
      seq: p.seq,
      workspaceId: p.workspace_id,
      ids: [classifyIdentity(p.identity, junk), classifyAnonymousId(p.anonymous_id, junk)],
      order: orderTokens(p.workspace_id, p.order_id),
      orderId: p.order_id,
    };
  });
  // The batch's own identifiers first: resolution needs their owners anyway. Of the identifiers
  // only the waiting events have, just the nodes owned by one of those owners matter: another owner
  // can match no token of this batch. At 1M events that second lookup found almost nothing and
  // returning every node made it most of the guard's time (docs/benchmarks.md).
  // An order's event names the profile that owns the order when it is applied, so that owner is a
  // token too: a merge of the owner waiting elsewhere comes first, and a merge here waits for an
  // older event of the order, even one from a device no identifier links to the owner.
  const orderEvents = [
    ...live.filter((i) => i.eventType === 'order'),
    ...pending.filter((p) => p.orderId !== null).map((p) => ({ ...p, payload: { order_id: p.orderId } })),
  ];
  const owners = orderEvents.length === 0 ? [] : await ownersOfOrders(w.tx, orderEvents);
  const ownerBySeq = new Map(orderEvents.map((e, n) => [e.seq, owners[n] ?? null]));
  const owner = (seq: number) => {
    const o = ownerBySeq.get(seq);
    return o ? [o] : [];
  };
  const own = await loadIdentifiersOf(w, live);
  const theirs = keysOf(pending);
  for (const k of own.keys()) theirs.delete(k);
  const ownOwners = [...w.graph.owners([...own.values()]), ...live.flatMap((i) => owner(i.seq))];
  await w.graph.load(w.tx, [...theirs.values()], ownOwners);
  // Each read above saw the database as of its own statement: a merge another loop committed in
  // between leaves some owners read before it (the merged-away profile) and some after (its
  // survivor), and tokens of one person that do not meet. One later statement names the survivor of
  // every owner read; if a merge did commit meanwhile, the waiting events' nodes are read again
  // without the owner filter (it may have left out nodes the merge moved to the survivor), and the
  // owners once more.
  const allKeys = [...own.values(), ...theirs.values()];
  const ownersRead = () => [...w.graph.owners(allKeys), ...ownerBySeq.values()].filter((o) => o !== null);
  let survivor = await findSurvivors(w.tx, ownersRead());
  if (survivor.size > 0) {
    await w.graph.load(w.tx, [...theirs.values()]);
    survivor = await findSurvivors(w.tx, ownersRead());
  }
  const asSurvivors = (tokens: string[]) => tokens.map((t) => survivor.get(t) ?? t);
  const { deferred } = partitionByOrder(
    live.map((i) => ({
      seq: i.seq,
      tokens: asSurvivors([
        ...orderingTokens(w.graph, i.workspaceId, [i.identity, i.anonymous]),
        ...(i.eventType === 'order' ? orderTokens(i.workspaceId, i.payload.order_id) : []),
        ...owner(i.seq),
      ]),
    })),
    pending.map((p) => ({
      seq: p.seq,
      tokens: asSurvivors([...orderingTokens(w.graph, p.workspaceId, p.ids), ...p.order, ...owner(p.seq)]),
    })),
  );
  return settled(deferred.map((d) => [d.seq, { kind: 'deferred' }]));
}

/**
 * Reads the graph nodes of these events' identifiers into the batch's unit (resolution decides from
 * them), answering their keys.
 */
export async function loadIdentifiersOf(
  w: BatchWork,
  items: readonly WorkItem[],
): Promise<Map<string, NodeKeyOf>> {
  const keys = keysOf(items.map((i) => ({ workspaceId: i.workspaceId, ids: [i.identity, i.anonymous] })));
  await w.graph.load(w.tx, [...keys.values()]);
  return keys;
}

/**
 * The claim took the batch off the backlog: the deferred events go back on it, the others are
 * marked (or deleted, when dropped). Claimed seqs whose event was deleted meanwhile (`gone`) need
 * nothing more.
 */
export async function markProcessed(w: BatchWork): Promise<void> {
  const applied: AppliedEvent[] = [];
  const dropped: number[] = [];
  const deferred: number[] = [];
  const deadLetters: repo.DeadLetterWrite[] = [];
  for (const i of w.items) {
    const s = w.settled.get(i.seq);
    if (s?.kind === 'deferred') {
      deferred.push(i.seq);
      continue;
    }
    if (s?.kind === 'dropped') {
      dropped.push(i.seq);
      continue;
    }
    if (s?.kind === 'dead_letter') {
      deadLetters.push(repo.deadLetter(i.workspaceId, i.seq, s.reason));
      if (!s.keepProfile) i.profileId = null;
    }
    // Processed either way (it left the backlog in the claim); recorded where it was applied.
    if (i.profileId !== null) applied.push({ seq: i.seq, profile_id: i.profileId, payload: i.payload });
  }
  await repo.insertDeadLetters(w.tx, deadLetters);
  await repo.returnToBacklog(w.tx, deferred);
  await markEventsApplied(w.tx, applied);
  await deleteEventsBySeq(w.tx, dropped);
}

/** An order event's token: its order, read as the orders step reads it (the backlog gives it as text). */
/** An order event's order as an ordering token (none without a usable order_id). */
export function orderTokens(workspaceId: string, orderId: unknown): string[] {
  const id = readOrderId(orderId);
  return id === null ? [] : [`order:${workspaceId}:${id}`];
}

type NodeKeyOf = { workspace_id: string; type: IdentifierType; value: string };

/** The identifier keys of these events, by their string key (identifierKey). */
function keysOf(
  events: ReadonlyArray<{ workspaceId: string; ids: ReadonlyArray<Identifier | null> }>,
): Map<string, NodeKeyOf> {
  const keys = new Map<string, NodeKeyOf>();
  for (const { workspaceId, ids } of events) {
    for (const id of ids) {
      if (id)
        keys.set(identifierKey(workspaceId, id), {
          workspace_id: workspaceId,
          type: id.type,
          value: id.value,
        });
    }
  }
  return keys;
}
