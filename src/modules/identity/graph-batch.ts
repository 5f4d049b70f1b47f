import type { Queryable } from '../../platform/db';
import { newUuid } from '../../platform/ids';
import type { Identifier, IdentifierType } from './identifiers';
import * as repo from './identity.repo';
import type { OwnerView } from './resolve';

/**
 * The identity graph's unit of work: the nodes and edges a change touches, read once, changed in
 * memory, written back with one statement per table. Ownership is kept live in memory: a merge
 * re-points the merged-away profile's nodes at once, so `ownerOf` always names a live profile.
 */

interface Node {
  id: string;
  workspaceId: string;
  type: IdentifierType;
  value: string;
  profileId: string;
  /** When this unit gave the identifier to a profile (first_seen of a new node; last_seen advances). */
  seenAt: Date | null;
  isNew: boolean;
  /**
   * The event that created the node in this unit, if one did. An edge records the event that first
   * put two identifiers together: a node another event of the same batch created is, for a later
   * event, as old as it would be had the batch been cut between them (one event per batch is the
   * reference: docs/profiles.md).
   */
  createdBy: string | null;
  dirty: boolean;
}

/** What the resolver knows of a profile; complete once `loaded` (new profiles start complete). */
export interface GraphView extends OwnerView {
  identities: Map<IdentifierType, Set<string>>;
  loaded: boolean;
}

export interface GraphBatch {
  /** Reads the nodes of these identifiers (one statement for all); only those of `ownedBy` if given. */
  load(tx: Queryable, keys: readonly repo.NodeKey[], ownedBy?: readonly string[]): Promise<void>;
  addNodes(rows: readonly repo.NodeRef[]): void;
  /** The profile owning this identifier, as far as this unit knows (live: merges re-point). */
  ownerOf(workspaceId: string, id: Identifier): string | null;
  /** The profiles owning any of these identifiers (read by load or addNodes). */
  owners(keys: readonly repo.NodeKey[]): string[];
  /** The resolver's view of a profile (created empty and incomplete when unknown). */
  view(profileId: string): GraphView;
  /** A profile created in this unit: its view is complete and empty. */
  created(profileId: string): void;
  /**
   * Completes the views of these profiles in one statement; `mergedCounts` supplies how many
   * profiles were merged into each (the profiles module's fact).
   */
  loadViews(
    tx: Queryable,
    profileIds: readonly string[],
    mergedCounts: (tx: Queryable, ids: readonly string[]) => Promise<ReadonlyMap<string, number>>,
  ): Promise<void>;
  /**
   * Gives the profile the identifier (creating its node, or moving it from another profile); the
   * event, when an event does it, is remembered as the new node's creator (`link`).
   */
  attach(profileId: string, workspaceId: string, id: Identifier, at: Date, eventId?: string): void;
  /**
   * Records that an event linked two identifiers of one profile: kept when this event created one of
   * them or when the link caused a merge (`force`); two identifiers that already shared a profile are
   * already connected, and re-recording that on every event would only cost writes.
   */
  link(workspaceId: string, from: Identifier, to: Identifier, eventId: string | null, force?: boolean): void;
  /** `secondaryId`'s identifiers and merged count now belong to `primaryId`. */
  merge(workspaceId: string, primaryId: string, secondaryId: string): void;
  /**
   * Writes nodes, edges and the re-pointing of merged-away profiles' nodes. 'stale' when another
   * writer created one of this unit's new identifiers meanwhile: the caller rolls back and retries.
   */
  flush(tx: Queryable, liveId: (id: string) => string): Promise<'ok' | 'stale'>;
}

/**
 * Nodes by workspace, type and value. Nested maps rather than one map of joined keys: a lookup then
 * hashes the caller's own strings, whose hashes V8 keeps, instead of building and hashing a new key
 * on every call (the joined key made `ownerOf` the pipeline's largest function in a profile).
 */
type NodeIndex = Map<string, Map<string, Map<string, Node>>>;

const findNode = (index: NodeIndex, workspaceId: string, type: string, value: string): Node | undefined =>
  index.get(workspaceId)?.get(type)?.get(value);

/**
 * The nodes each profile owns in this unit, kept with every change of owner: a merge moves the
 * merged-away profile's nodes without walking every node of the unit (that walk, once per merge,
 * allocated more than any other function of the pipeline: docs/benchmarks.md).
 */
type OwnerIndex = Map<string, Set<Node>>;

/** Files the node under its current owner. */
function own(owners: OwnerIndex, n: Node): void {
  const owned = owners.get(n.profileId);
  if (owned) owned.add(n);
  else owners.set(n.profileId, new Set([n]));
}

function setOwner(owners: OwnerIndex, n: Node, profileId: string): void {
  owners.get(n.profileId)?.delete(n);
  n.profileId = profileId;
  own(owners, n);
}

function putNode(index: NodeIndex, owners: OwnerIndex, n: Node): void {
  own(owners, n);
  let byType = index.get(n.workspaceId);
  if (!byType) {
    byType = new Map();
    index.set(n.workspaceId, byType);
  }
  let byValue = byType.get(n.type);
  if (!byValue) {
    byValue = new Map();
    byType.set(n.type, byValue);
  }
  byValue.set(n.value, n);
}

function* allNodes(index: NodeIndex): Generator<Node> {
  for (const byType of index.values()) for (const byValue of byType.values()) yield* byValue.values();
}

export function createGraphBatch(): GraphBatch {
  const nodes: NodeIndex = new Map();
  const owned: OwnerIndex = new Map();
  const views = new Map<string, GraphView>();
  const edges = new Map<
    string,
    { workspace_id: string; from_node: string; to_node: string; event_id: string | null }
  >();
  const moves: Array<{ from: string; to: string }> = [];

  const view = (profileId: string): GraphView => {
    let v = views.get(profileId);
    if (!v) {
      v = { id: profileId, identities: new Map(), mergedCount: 0, loaded: false };
      views.set(profileId, v);
    }
    return v;
  };
  const hold = (v: GraphView, type: IdentifierType, value: string) => {
    if (type !== 'anonymous_id') v.identities.set(type, (v.identities.get(type) ?? new Set()).add(value));
  };

  const batch: GraphBatch = {
    async load(tx, keys, ownedBy) {
      batch.addNodes(await repo.findNodes(tx, keys, ownedBy));
    },
    addNodes(rows) {
      for (const r of rows) {
        if (findNode(nodes, r.workspace_id, r.type, r.value)) continue;
        putNode(nodes, owned, {
          id: r.id,
          workspaceId: r.workspace_id,
          type: r.type,
          value: r.value,
          profileId: r.profile_id,
          seenAt: null,
          isNew: false,
          createdBy: null,
          dirty: false,
        });
      }
    },
    ownerOf(workspaceId, id) {
      return findNode(nodes, workspaceId, id.type, id.value)?.profileId ?? null;
    },
    owners(keys) {
      const out = new Set<string>();
      for (const k of keys) {
        const n = findNode(nodes, k.workspace_id, k.type, k.value);
        if (n) out.add(n.profileId);
      }
      return [...out];
    },
    view,
    created(profileId) {
      view(profileId).loaded = true;
    },
    async loadViews(tx, profileIds, mergedCounts) {
      const missing = [...new Set(profileIds)].filter((id) => !view(id).loaded);
      if (missing.length === 0) return;
      const [held, counts] = await Promise.all([
        repo.listIdentifiersOfProfiles(tx, missing, { anonymous: false }),
        mergedCounts(tx, missing),
      ]);
      for (const id of missing) {
        const v = view(id);
        // Union with what this unit already attached (not yet written).
        for (const n of held.get(id) ?? []) hold(v, n.type, n.value);
        v.mergedCount += counts.get(id) ?? 0;
        v.loaded = true;
      }
    },
    attach(profileId, workspaceId, id, at, eventId) {
      const n = findNode(nodes, workspaceId, id.type, id.value);
      if (n) {
        if (n.profileId !== profileId) {
          setOwner(owned, n, profileId);
          n.seenAt = at;
          n.dirty = true;
        }
      } else {
        putNode(nodes, owned, {
          id: newUuid(),
          workspaceId,
          type: id.type,
          value: id.value,
          profileId,
          seenAt: at,
          isNew: true,
          createdBy: eventId ?? null,
          dirty: true,
        });
      }
      hold(view(profileId), id.type, id.value);
    },
    link(workspaceId, from, to, eventId, force = false) {
      const a = findNode(nodes, workspaceId, from.type, from.value);
      const b = findNode(nodes, workspaceId, to.type, to.value);
      if (!a || !b || a.id === b.id) return;
      const bornHere = (n: Node) => n.isNew && n.createdBy === eventId;
      if (!force && !bornHere(a) && !bornHere(b)) return;
      const k = `${a.id}|${b.id}`;
      if (!edges.has(k))
        edges.set(k, { workspace_id: workspaceId, from_node: a.id, to_node: b.id, event_id: eventId });
    },
    merge(_workspaceId, primaryId, secondaryId) {
      if (primaryId === secondaryId) return;
      const p = view(primaryId);
      const s = view(secondaryId);
      if (!p.loaded || !s.loaded) throw new Error('merge needs both profiles’ views loaded');
      for (const [type, values] of s.identities) for (const v of values) hold(p, type, v);
      p.mergedCount += 1 + s.mergedCount;
      // Written nodes move with repointNodes at flush; this keeps ownerOf right for later events.
      const moving = owned.get(secondaryId);
      owned.delete(secondaryId);
      for (const n of moving ?? []) {
        n.profileId = primaryId;
        own(owned, n);
      }
      moves.push({ from: secondaryId, to: primaryId });
    },
    async flush(tx, liveId) {
      await repo.repointNodes(
        tx,
        moves.map((m) => ({ from: m.from, to: liveId(m.to) })),
      );
      const writes: repo.NodeWrite[] = [];
      const fresh: string[] = [];
      for (const n of allNodes(nodes)) {
        if (!n.dirty || !n.seenAt) continue;
        writes.push({
          id: n.id,
          workspace_id: n.workspaceId,
          type: n.type,
          value: n.value,
          profile_id: liveId(n.profileId),
          first_seen: n.seenAt.toISOString(),
          last_seen: n.seenAt.toISOString(),
        });
        if (n.isNew) fresh.push(n.id);
      }
      const written = await repo.upsertNodes(tx, writes);
      if (fresh.some((id) => !written.has(id))) return 'stale';
      await repo.insertEdges(tx, [...edges.values()]);
      return 'ok';
    },
  };
  return batch;
}
