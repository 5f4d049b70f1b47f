import type { Logger } from 'pino';
import type { Queryable } from '../../platform/db';
import { type Settlement, type StepResult, settled } from '../../platform/pipeline';
import type { GraphBatch } from './graph-batch';
import { type Identifier, identifierKey, legacyIdentifier, suppressionHashes } from './identifiers';
import type * as repo from './identity.repo';
import { decide } from './resolve';
import { findSuppressed } from './suppressions.repo';

/**
 * The pipeline's identity step (docs/profiles.md): lock the profiles owning the batch's identifiers,
 * then, event by event in order, let the pure resolver (resolve.ts) say which profile the event
 * belongs to, and carry that out in the graph unit and, through the port, in the profiles unit.
 */

/** One event as this step sees it; `profileId` is what it decides. */
export interface ResolvableEvent {
  seq: number;
  eventId: string;
  workspaceId: string;
  at: Date;
  identity: Identifier | null;
  anonymous: Identifier | null;
  profileId: string | null;
  /** The workspace's merge cap (settings.merge_cap); the documented default when absent. */
  mergeCap?: number;
  /**
   * The identifiers as the event carried them: suppressions stored before identifiers were
   * normalized are looked up under what older versions made of them too (`suppressionHashes`).
   */
  event?: { identity: string | null; anonymous_id: string | null };
}

/** What identity resolution needs from the profiles module (wired by the pipeline). */
export interface ProfilesPort {
  /**
   * Locks these live profiles and the ones merged into them in the one lock order, adding them to
   * the profiles unit; 'stale' when one was merged or erased after the graph was read.
   */
  lock(tx: Queryable, ids: readonly string[]): Promise<'ok' | 'stale'>;
  /** Reads the traits of locked profiles that a merge may combine (the lock reads only heads). */
  loadTraits(tx: Queryable, ids: readonly string[]): Promise<void>;
  mergedCounts(tx: Queryable, ids: readonly string[]): Promise<ReadonlyMap<string, number>>;
  create(workspaceId: string, at: Date, eventId: string): string;
  /**
   * This event merges the secondary into the primary. The pipeline combines their traits later, in
   * the traits step, between the trait writes of the events before and after it (arrival order).
   */
  merge(primaryId: string, secondaryId: string, eventId: string, at: Date): void;
}

const NO_IDENTIFIER = 'no usable identifier: identity and anonymous_id are absent or junk values';

export async function resolveIdentities(
  tx: Queryable,
  events: readonly ResolvableEvent[],
  graph: GraphBatch,
  profiles: ProfilesPort,
  log: Logger,
  yieldNow: () => Promise<void>,
): Promise<StepResult> {
  const owned = graph.owners(events.flatMap(keysOf));
  if ((await profiles.lock(tx, owned)) === 'stale') {
    return { kind: 'retry', reason: 'a profile was merged or erased before it was locked' };
  }
  // The resolver needs a profile's identifiers and merge count only for a possible merge or a new
  // identity on an anonymous profile: load those few up front, in one query.
  const views = new Set<string>();
  const mergeable = new Set<string>();
  for (const e of events) {
    const io = e.identity ? graph.ownerOf(e.workspaceId, e.identity) : null;
    const ao = e.anonymous ? graph.ownerOf(e.workspaceId, e.anonymous) : null;
    if (io && ao && io !== ao) {
      views.add(io).add(ao);
      mergeable.add(io).add(ao);
    } else if (!io && ao && e.identity) views.add(ao);
  }
  await graph.loadViews(tx, [...views], profiles.mergedCounts);
  await profiles.loadTraits(tx, [...mergeable]);
  const isSuppressed = await suppressionOf(tx, events, graph);

  const out: Array<[number, Settlement]> = [];
  for (const e of events) {
    await yieldNow();
    const ws = e.workspaceId;
    const identityOwner = e.identity ? graph.ownerOf(ws, e.identity) : null;
    const anonymousOwner = e.anonymous ? graph.ownerOf(ws, e.anonymous) : null;
    // Earlier events of this batch may have moved identifiers: load any view still missing.
    if (identityOwner && anonymousOwner && identityOwner !== anonymousOwner) {
      await graph.loadViews(tx, [identityOwner, anonymousOwner], profiles.mergedCounts);
      await profiles.loadTraits(tx, [identityOwner, anonymousOwner]);
    } else if (!identityOwner && anonymousOwner && e.identity) {
      await graph.loadViews(tx, [anonymousOwner], profiles.mergedCounts);
    }
    const d = decide({
      identity: e.identity,
      anonymous: e.anonymous,
      identityOwner: identityOwner ? graph.view(identityOwner) : null,
      anonymousOwner: anonymousOwner ? graph.view(anonymousOwner) : null,
      identitySuppressed: !identityOwner && isSuppressed(e, 'identity'),
      anonymousSuppressed: !anonymousOwner && isSuppressed(e, 'anonymous'),
      mergeCap: e.mergeCap,
    });

    let profileId: string;
    switch (d.kind) {
      case 'drop':
        out.push([
          e.seq,
          d.reason === 'suppressed'
            ? { kind: 'dropped', reason: 'identifier suppressed by an erasure' }
            : { kind: 'dead_letter', reason: NO_IDENTIFIER },
        ]);
        continue;
      case 'create':
        profileId = profiles.create(ws, e.at, e.eventId);
        graph.created(profileId);
        for (const id of d.attach) graph.attach(profileId, ws, id, e.at, e.eventId);
        break;
      case 'join':
        profileId = d.profileId;
        for (const id of d.attach) graph.attach(profileId, ws, id, e.at, e.eventId);
        break;
      case 'merge':
        profileId = d.primary;
        profiles.merge(d.primary, d.secondary, e.eventId, e.at);
        graph.merge(ws, d.primary, d.secondary);
        // Each merge at debug; the processing loop says how many a batch merged at info.
        log.debug(
          { workspace_id: ws, event_id: e.eventId, primary: d.primary, merged: d.secondary },
          'profiles merged',
        );
        break;
    }
    if ('refused' in d && d.refused) {
      log.info(
        { workspace_id: ws, event_id: e.eventId, profile_id: profileId, refused: d.refused },
        d.refused === 'merge_cap'
          ? 'merge refused: merge cap reached'
          : 'merge refused: unique identifiers differ',
      );
    }
    if (
      e.anonymous &&
      e.identity &&
      graph.ownerOf(ws, e.anonymous) === profileId &&
      graph.ownerOf(ws, e.identity) === profileId
    ) {
      graph.link(ws, e.anonymous, e.identity, e.eventId, d.kind === 'merge');
    }
    e.profileId = profileId;
  }
  return settled(out);
}

function keysOf(e: ResolvableEvent): repo.NodeKey[] {
  const keys: repo.NodeKey[] = [];
  for (const id of [e.identity, e.anonymous]) {
    if (id) keys.push({ workspace_id: e.workspaceId, type: id.type, value: id.value });
  }
  return keys;
}

/**
 * Suppression applies to identifiers nobody owns (an owned one was never erased): one lookup. An
 * erasure's horizon blocks an identifier only for the events received before it (seq up to the
 * horizon); a suppression blocks it for good.
 */
async function suppressionOf(
  tx: Queryable,
  events: readonly ResolvableEvent[],
  graph: GraphBatch,
): Promise<(e: ResolvableEvent, which: 'identity' | 'anonymous') => boolean> {
  // The hashes each unowned identifier of each event may be on the list as, by event and identifier.
  const hashesOf = new Map<ResolvableEvent, { identity: string[]; anonymous: string[] }>();
  const unowned = new Map<string, { workspace_id: string; hash: string }>();
  const candidates = (e: ResolvableEvent, id: Identifier | null, kind: 'identity' | 'anonymous_id') => {
    if (!id || graph.ownerOf(e.workspaceId, id)) return [];
    const raw = kind === 'identity' ? e.event?.identity : e.event?.anonymous_id;
    const hashes = suppressionHashes(e.workspaceId, id, legacyIdentifier(raw, kind));
    for (const hash of hashes) unowned.set(`${e.workspaceId}|${hash}`, { workspace_id: e.workspaceId, hash });
    return hashes;
  };
  for (const e of events) {
    hashesOf.set(e, {
      identity: candidates(e, e.identity, 'identity'),
      anonymous: candidates(e, e.anonymous, 'anonymous_id'),
    });
  }
  // Until which seq each found hash blocks (Infinity: for good).
  const suppressed = new Map(
    (await findSuppressed(tx, [...unowned.values()])).map((s) => [
      `${s.workspace_id}|${s.hash}`,
      s.until_seq === null ? Number.POSITIVE_INFINITY : Number(s.until_seq),
    ]),
  );
  return (e, which) => {
    if (suppressed.size === 0) return false;
    const hashes = hashesOf.get(e)?.[which] ?? [];
    return hashes.some((h) => e.seq <= (suppressed.get(`${e.workspaceId}|${h}`) ?? -1));
  };
}

/** Identifier keys and owning profiles of an event: the per-person ordering tokens (ordering.ts). */
export function orderingTokens(
  graph: GraphBatch,
  workspaceId: string,
  ids: ReadonlyArray<Identifier | null>,
): string[] {
  const tokens: string[] = [];
  for (const id of ids) {
    if (!id) continue;
    tokens.push(identifierKey(workspaceId, id));
    const owner = graph.ownerOf(workspaceId, id);
    if (owner) tokens.push(owner);
  }
  return tokens;
}
