import type { Logger } from 'pino';
import { createYielder } from '../../platform/cooperate';
import { type CursorCodec, type Page, type PageRequest, toPage } from '../../platform/cursor';
import type { Db, Queryable } from '../../platform/db';
import { notFound } from '../../platform/errors';
import { iso } from '../../platform/http/envelope';
import { newSortableId } from '../../platform/ids';
import { applyOrderEvents } from '../commerce/commerce.service';
import { readOrder } from '../commerce/order-payload';
import {
  classifyAnonymousId,
  classifyIdentity,
  type Identifier,
  identifierKey,
  junkSetFromSettings,
  suppressionHash,
} from '../identity/identifiers';
import * as graph from '../identity/identity.repo';
import { decide } from '../identity/resolve';
import {
  type BatchProfile,
  createProfileBatch,
  type Source,
  StaleReadError,
} from '../profiles/profile-batch';
import * as profilesRepo from '../profiles/profiles.repo';
import { traitsFromPayload } from '../profiles/traits';
import { partitionByOrder } from './ordering';
import * as repo from './processing.repo';

/**
 * Applies claimed events to profiles: the shell around the pure cores (identifier classification,
 * the resolver's decision, the attribute merger). One transaction per batch holds the claim, every
 * effect and the processed mark, so each event is applied exactly once; every read and write is one
 * statement per batch, not per event.
 */

/**
 * Notification channel that wakes the workers at once (a re-queued dead letter sends it). Appends to
 * the event log do not notify: NOTIFY serializes the commits of every notifying transaction on one
 * database-wide lock, which the group-committed ingest path cannot afford (seen in a run: ingest
 * inserts queued on it). Workers poll instead, backing off to 200 ms when idle.
 */
export const EVENTS_CHANNEL = 'cdp_events';

export interface ProcessorContext {
  log: Logger;
  /** Workspace settings (junk identifier lists), cached briefly: they change rarely. */
  settings: SettingsCache;
  /**
   * Held from a batch's first order until its commit, when several loops share a process: every
   * order upserts its products, and two batches locking the same product rows in different orders
   * would wait on (or deadlock with) each other. The rest of a batch still runs alongside.
   */
  orderGate?: Gate;
}

/** A first-come mutex: acquire() resolves with the function that releases it. */
export interface Gate {
  acquire(): Promise<() => void>;
}

export function createGate(): Gate {
  let tail: Promise<void> = Promise.resolve();
  return {
    acquire() {
      let release!: () => void;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      const ready = tail.then(() => release);
      tail = tail.then(() => held);
      return ready;
    },
  };
}

export interface BatchOutcome {
  claimed: number;
  applied: number;
  /** Left for later: an older event of the same person is held by another worker. */
  deferred: number;
  deadLettered: number;
  /** Dropped: identifiers suppressed by an erasure. */
  dropped: number;
  seqs: number[];
}

export interface SettingsCache {
  junk(workspaceId: string): ReadonlySet<string>;
  load(q: Queryable, workspaceIds: readonly string[]): Promise<void>;
}

export function createSettingsCache(ttlMs = 30_000): SettingsCache {
  const cache = new Map<string, { junk: ReadonlySet<string>; expires: number }>();
  return {
    junk: (id) => cache.get(id)?.junk ?? junkSetFromSettings({}),
    async load(q, ids) {
      const now = Date.now();
      const missing = [...new Set(ids)].filter((id) => (cache.get(id)?.expires ?? 0) <= now);
      if (missing.length === 0) return;
      for (const row of await repo.loadWorkspaceSettings(q, missing)) {
        cache.set(row.id, { junk: junkSetFromSettings(row.settings), expires: now + ttlMs });
      }
    },
  };
}

interface Classified {
  event: repo.ClaimedEvent;
  identity: Identifier | null;
  anonymous: Identifier | null;
}

/** Claims up to `limit` events and applies them in one transaction. */
export async function processBatch(db: Db, ctx: ProcessorContext, limit: number): Promise<BatchOutcome> {
  const held: Array<() => void> = [];
  const gated: ProcessorContext = {
    ...ctx,
    ...(ctx.orderGate
      ? {
          orderGate: {
            acquire: async () => {
              const release = await ctx.orderGate!.acquire();
              held.push(release);
              return release;
            },
          },
        }
      : {}),
  };
  try {
    return await runBatch(db, gated, limit);
  } finally {
    // After COMMIT (or ROLLBACK): the product rows are free again.
    for (const release of held) release();
  }
}

async function runBatch(db: Db, ctx: ProcessorContext, limit: number): Promise<BatchOutcome> {
  return db.transaction(async (tx) => {
    await repo.preferIndexOrder(tx, true);
    const claimed = await repo.claimEvents(tx, limit);
    const outcome: BatchOutcome = {
      claimed: claimed.length,
      applied: 0,
      deferred: 0,
      deadLettered: 0,
      dropped: 0,
      seqs: claimed.map((e) => e.seq),
    };
    if (claimed.length === 0) return outcome;
    try {
      await applyEvents(tx, ctx, claimed, outcome);
    } catch (err) {
      // The loop needs to know which events failed, to retry them one by one.
      if (typeof err === 'object' && err !== null) (err as { seqs?: number[] }).seqs = outcome.seqs;
      throw err;
    }
    return outcome;
  });
}

/**
 * Dead-letters one event in its own transaction (after it failed `attempts` times on its own), so
 * the stream moves on without it. False when it was meanwhile processed or is held elsewhere.
 */
export async function deadLetterEvent(
  db: Db,
  seq: number,
  reason: string,
  attempts: number,
): Promise<boolean> {
  return db.transaction(async (tx) => {
    const e = await repo.claimEvent(tx, seq);
    if (!e) return false;
    await repo.insertDeadLetters(tx, [
      {
        id: newSortableId('dlq'),
        workspace_id: e.workspace_id,
        event_seq: e.seq,
        reason: reason.slice(0, 1000),
        attempts,
      },
    ]);
    await repo.markProcessed(tx, [{ seq: e.seq, profile_id: null }]);
    return true;
  });
}

const classify = (
  ctx: ProcessorContext,
  e: { workspace_id: string; identity: string | null; anonymous_id: string | null },
) => {
  const junk = ctx.settings.junk(e.workspace_id);
  return {
    identity: classifyIdentity(e.identity, junk),
    anonymous: classifyAnonymousId(e.anonymous_id, junk),
  };
};

async function applyEvents(
  tx: Queryable,
  ctx: ProcessorContext,
  claimed: repo.ClaimedEvent[],
  outcome: BatchOutcome,
): Promise<void> {
  await ctx.settings.load(
    tx,
    claimed.map((e) => e.workspace_id),
  );
  const events: Classified[] = claimed.map((event) => ({ event, ...classify(ctx, event) }));
  const maxSeq = claimed[claimed.length - 1]!.seq;
  const pending = (await repo.findPendingBefore(tx, maxSeq, outcome.seqs, 5000)).map((p) => ({
    seq: p.seq,
    workspaceId: p.workspace_id,
    ...classify(ctx, p),
  }));
  await repo.preferIndexOrder(tx, false);

  // One lookup for every identifier of the batch and of the events it may have to wait for.
  const keys = new Map<string, graph.NodeKey>();
  const addKey = (ws: string, id: Identifier | null) => {
    if (id) keys.set(identifierKey(ws, id), { workspace_id: ws, type: id.type, value: id.value });
  };
  for (const c of events) {
    addKey(c.event.workspace_id, c.identity);
    addKey(c.event.workspace_id, c.anonymous);
  }
  for (const p of pending) {
    addKey(p.workspaceId, p.identity);
    addKey(p.workspaceId, p.anonymous);
  }
  const nodes = await graph.findNodes(tx, [...keys.values()]);
  const ownerOfKey = new Map(nodes.map((n) => [identifierKey(n.workspace_id, n), n.profile_id]));

  // Per-person order across workers (ordering.ts): tokens are identifiers and their owning profiles.
  const tokensOf = (ws: string, ids: Array<Identifier | null>) => {
    const tokens: string[] = [];
    for (const id of ids) {
      if (!id) continue;
      const k = identifierKey(ws, id);
      tokens.push(k);
      const owner = ownerOfKey.get(k);
      if (owner) tokens.push(owner);
    }
    return tokens;
  };
  const { ready, deferred } = partitionByOrder(
    events.map((c) => ({
      ...c,
      seq: c.event.seq,
      tokens: tokensOf(c.event.workspace_id, [c.identity, c.anonymous]),
    })),
    pending.map((p) => ({ seq: p.seq, tokens: tokensOf(p.workspaceId, [p.identity, p.anonymous]) })),
  );
  outcome.deferred = deferred.length;
  if (ready.length === 0) return;

  // Lock every profile the ready events touch, in id order (the one lock order of every writer).
  // With ROLE=all the HTTP server shares this thread: every few milliseconds of applying events,
  // requests that arrived meanwhile get their turn (a batch of wide writes is seconds of CPU).
  const yieldNow = createYielder();
  const batch = createProfileBatch(yieldNow);
  const readyKeys = new Set<string>();
  for (const c of ready) {
    if (c.identity) readyKeys.add(identifierKey(c.event.workspace_id, c.identity));
    if (c.anonymous) readyKeys.add(identifierKey(c.event.workspace_id, c.anonymous));
  }
  const owned = nodes.filter((n) => readyKeys.has(identifierKey(n.workspace_id, n)));
  // With the profiles merged into them (a merge re-points those): all locked in one statement.
  const { rows: locked, complete } = await profilesRepo.lockProfiles(tx, [
    ...new Set(owned.map((n) => n.profile_id)),
  ]);
  const lockedIds = new Set(locked.map((p) => p.id));
  for (const n of owned) {
    // Merged away or erased between the lookup and the lock: read again from scratch.
    if (!lockedIds.has(n.profile_id)) throw new StaleReadError('a profile vanished before it was locked');
  }
  if (!complete || locked.some((p) => p.merged_into !== null))
    throw new StaleReadError('a profile was merged before it was locked');
  batch.addLocked(locked);
  batch.addNodes(owned);

  // The resolver needs a profile's identifiers and merge count only for a possible merge or a new
  // identity on an anonymous profile: load those few up front, in one query.
  const views = new Set<string>();
  for (const c of ready) {
    const ws = c.event.workspace_id;
    const io = c.identity ? ownerOfKey.get(identifierKey(ws, c.identity)) : undefined;
    const ao = c.anonymous ? ownerOfKey.get(identifierKey(ws, c.anonymous)) : undefined;
    if (io && ao && io !== ao) views.add(io).add(ao);
    else if (!io && ao && c.identity) views.add(ao);
  }
  await batch.loadViews(
    tx,
    [...views].map((id) => batch.profiles.get(id) ?? null),
  );

  // Suppression applies to identifiers nobody owns (an owned one was never erased).
  const unowned = new Map<string, { workspace_id: string; hash: string }>();
  for (const c of ready) {
    for (const id of [c.identity, c.anonymous]) {
      if (!id || ownerOfKey.has(identifierKey(c.event.workspace_id, id))) continue;
      const hash = suppressionHash(c.event.workspace_id, id);
      unowned.set(`${c.event.workspace_id}|${hash}`, { workspace_id: c.event.workspace_id, hash });
    }
  }
  const suppressed = new Set(
    (await graph.findSuppressed(tx, [...unowned.values()])).map((s) => `${s.workspace_id}|${s.hash}`),
  );
  const isSuppressed = (ws: string, id: Identifier | null) =>
    id !== null && suppressed.size > 0 && suppressed.has(`${ws}|${suppressionHash(ws, id)}`);

  const processed: Array<{ seq: number; profile: BatchProfile | null }> = [];
  const dropped: number[] = [];
  const deadLetters: Array<{
    id: string;
    workspace_id: string;
    event_seq: number;
    reason: string;
    attempts: number;
  }> = [];
  const orders: Array<{ event: repo.ClaimedEvent; profile: BatchProfile }> = [];

  for (const c of ready) {
    await yieldNow();
    const e = c.event;
    const ws = e.workspace_id;
    const at = e.occurred_at;
    const source: Source = { type: 'event', id: e.id };
    const identityOwner = c.identity ? batch.ownerOf(ws, c.identity) : null;
    const anonymousOwner = c.anonymous ? batch.ownerOf(ws, c.anonymous) : null;
    // Earlier events of this batch may have moved identifiers: load any view still missing.
    if (identityOwner && anonymousOwner && identityOwner !== anonymousOwner) {
      await batch.loadViews(tx, [identityOwner, anonymousOwner]);
    } else if (!identityOwner && anonymousOwner && c.identity) await batch.loadViews(tx, [anonymousOwner]);
    const d = decide({
      identity: c.identity,
      anonymous: c.anonymous,
      identityOwner,
      anonymousOwner,
      identitySuppressed: !identityOwner && isSuppressed(ws, c.identity),
      anonymousSuppressed: !anonymousOwner && isSuppressed(ws, c.anonymous),
    });

    let profile: BatchProfile;
    switch (d.kind) {
      case 'drop':
        if (d.reason === 'suppressed') dropped.push(e.seq);
        else {
          deadLetters.push({
            id: newSortableId('dlq'),
            workspace_id: ws,
            event_seq: e.seq,
            reason: 'no usable identifier: identity and anonymous_id are absent or junk values',
            attempts: 1,
          });
          processed.push({ seq: e.seq, profile: null });
        }
        continue;
      case 'create':
        profile = batch.createProfile(ws, at, source);
        for (const id of d.attach) batch.attach(profile, id, at);
        break;
      case 'join':
        profile = batch.survivor(d.profileId)!;
        for (const id of d.attach) batch.attach(profile, id, at);
        break;
      case 'merge': {
        profile = batch.survivor(d.primary)!;
        const secondary = batch.survivor(d.secondary)!;
        batch.merge(profile, secondary, source, at);
        batch.mergedFact(ws, profile.id, [secondary.id], source);
        ctx.log.info(
          { workspace_id: ws, event_id: e.id, primary: profile.id, merged: secondary.id },
          'profiles merged',
        );
        break;
      }
    }
    if ('refused' in d && d.refused) {
      ctx.log.info(
        { workspace_id: ws, event_id: e.id, profile_id: profile.id, refused: d.refused },
        d.refused === 'merge_cap'
          ? 'merge refused: merge cap reached'
          : 'merge refused: unique identifiers differ',
      );
    }
    if (
      c.anonymous &&
      c.identity &&
      batch.ownerOf(ws, c.anonymous)?.id === profile.id &&
      batch.ownerOf(ws, c.identity)?.id === profile.id
    ) {
      batch.link(ws, c.anonymous, c.identity, e.id, d.kind === 'merge');
    }

    const update = e.event_type === 'identify' ? traitsFromPayload(e.payload ?? {}) : {};
    // An e-mail identity fills an empty e-mail field (so `email=` finds the profile) under the
    // same newer-wins rule as a trait.
    if (c.identity?.type === 'email' && update.email === undefined && profile.traits.email === null) {
      update.email = c.identity.value;
    }
    if (
      update.email !== undefined ||
      update.first_name !== undefined ||
      update.last_name !== undefined ||
      update.attributes
    ) {
      const traits = batch.applyTraits(profile, update, at.getTime(), source, at);
      if (!traits.applied) {
        // Never dropped silently: set aside with the reason, retryable once the profile has room.
        deadLetters.push({
          id: newSortableId('dlq'),
          workspace_id: ws,
          event_seq: e.seq,
          reason: traits.reason,
          attempts: 1,
        });
        processed.push({ seq: e.seq, profile: null });
        continue;
      }
    }
    if (e.event_type === 'order') orders.push({ event: e, profile });
    processed.push({ seq: e.seq, profile });
  }

  await batch.flush(tx);
  if (orders.length > 0 && ctx.orderGate) await ctx.orderGate.acquire();
  const orderOutcomes = await applyOrderEvents(
    tx,
    orders.map((o) => ({
      workspaceId: o.event.workspace_id,
      profileId: batch.survivor(o.profile.id)!.id,
      eventId: o.event.id,
      occurredAt: o.event.occurred_at,
      payload: o.event.payload ?? {},
    })),
  );
  // An order that cannot be recorded (a payload that reached the log by another road than the ingest
  // rules) is never dropped silently: the event still counts for its profile, and a dead letter says
  // why its order is missing.
  orderOutcomes.forEach((result, i) => {
    if (result !== 'ignored') return;
    const e = orders[i]!.event;
    const read = readOrder(e.payload ?? {});
    if (!('problem' in read)) return; // the order's workspace was deleted meanwhile
    ctx.log.warn({ event_id: e.id, problem: read.problem }, 'order not recorded: unusable order payload');
    deadLetters.push({
      id: newSortableId('dlq'),
      workspace_id: e.workspace_id,
      event_seq: e.seq,
      reason: `order not recorded: ${read.problem}`,
      attempts: 1,
    });
  });
  await repo.insertDeadLetters(tx, deadLetters);
  await repo.markProcessed(
    tx,
    processed.map((p) => ({ seq: p.seq, profile_id: p.profile ? batch.survivor(p.profile.id)!.id : null })),
  );
  await repo.deleteEvents(tx, dropped);
  outcome.applied = processed.length - deadLetters.length;
  outcome.deadLettered = deadLetters.length;
  outcome.dropped = dropped.length;
}

export interface DeadLetterView {
  id: string;
  reason: string;
  attempts: number;
  failed_at: string;
  event: {
    id: string;
    event_type: string;
    event_name: string;
    anonymous_id: string | null;
    identity: string | null;
    payload: Record<string, unknown>;
    timestamp: string;
    received_at: string;
  };
}

export async function listDeadLetters(
  db: Db,
  codec: CursorCodec,
  workspaceId: string,
  page: PageRequest,
): Promise<Page<DeadLetterView>> {
  const afterSeq = page.after ? Number(page.after[0]) : null;
  const rows = await repo.listDeadLetters(db, workspaceId, afterSeq, page.limit + 1);
  return toPage(
    codec,
    page,
    rows,
    (r) => [r.seq],
    (r) => ({
      id: r.id,
      reason: r.reason,
      attempts: r.attempts,
      failed_at: iso(r.created_at)!,
      event: {
        id: r.event_id,
        event_type: r.event_type,
        event_name: r.event_name,
        anonymous_id: r.anonymous_id,
        identity: r.identity,
        payload: r.payload,
        timestamp: iso(r.occurred_at)!,
        received_at: iso(r.received_at)!,
      },
    }),
  );
}

/** Puts a dead-lettered event back in the stream and wakes the workers. */
export async function requeueDeadLetter(
  db: Db,
  workspaceId: string,
  id: string,
): Promise<{ id: string; event_id: string; requeued: true }> {
  const eventId = await db.transaction(async (tx) => {
    const eventId = await repo.requeueDeadLetter(tx, workspaceId, id);
    if (eventId) await repo.notifyWorkers(tx, EVENTS_CHANNEL);
    return eventId;
  });
  if (!eventId) throw notFound('dead letter');
  return { id, event_id: eventId, requeued: true };
}
