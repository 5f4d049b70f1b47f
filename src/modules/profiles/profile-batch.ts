import { createYielder } from '../../platform/cooperate';
import type { Queryable } from '../../platform/db';
import { newUuid } from '../../platform/ids';
import { reassignOrders } from '../commerce/commerce.service';
import type { Identifier, IdentifierType } from '../identity/identifiers';
import * as graph from '../identity/identity.repo';
import type { OwnerView } from '../identity/resolve';
import { type OutboxFact, writeOutboxMany } from '../outbox/outbox.repo';
import * as repo from './profiles.repo';
import {
  type FieldChange,
  jsonBytes,
  mergeTraitsInPlace,
  TRAIT_LIMITS,
  type TraitState,
  type TraitUpdate,
  timesOfProfile,
  type WriteTime,
} from './traits';

/**
 * A unit of work over profiles and the identity graph: load the rows a change touches (locked),
 * change them in memory, then write everything back with one statement per table. The worker uses
 * it for a whole claimed batch of events (one round trip per table, not per event); the API uses it
 * for one merge or one profile write, so both follow the same rules and write the same facts.
 */

/** Who caused a change: recorded in lineage and in merge / creation facts. */
export interface Source {
  type: 'event' | 'api_key';
  id: string | null;
}

export interface BatchProfile extends OwnerView {
  id: string;
  workspaceId: string;
  traits: TraitState;
  createdAt: Date;
  updatedAt: Date;
  isNew: boolean;
  dirty: boolean;
  /** Set when merged into another profile during this unit of work. */
  mergedInto: string | null;
  /**
   * Identifiers held and merged-id count: complete only once `viewLoaded` (new profiles start
   * complete; locked ones load on demand, see loadViews). Until then they hold this batch's additions.
   */
  identities: Map<IdentifierType, Set<string>>;
  viewLoaded: boolean;
  /**
   * Size of `traits.attributes` as JSON, at least: measured on the first write that grows them,
   * then kept up to date by each write's growth (null until measured).
   */
  attributesBytes: number | null;
}

/** What applyTraits did: the changes, or nothing at all because the profile would grow too big. */
export type TraitsOutcome =
  | { applied: true; changes: FieldChange[] }
  | { applied: false; reason: string; bytes: number };

interface BatchNode {
  id: string;
  workspaceId: string;
  type: IdentifierType;
  value: string;
  profileId: string;
  firstSeen: Date;
  lastSeen: Date;
  isNew: boolean;
  dirty: boolean;
}

const nodeKey = (workspaceId: string, type: string, value: string) => `${workspaceId}|${type}|${value}`;

/** A lost race with another writer (an identifier created or a profile merged meanwhile): retry. */
export class StaleReadError extends Error {
  override readonly name = 'StaleReadError';
}

export interface ProfileBatch {
  readonly profiles: ReadonlyMap<string, BatchProfile>;
  /** Adds rows read (and locked) by the caller. */
  addLocked(rows: readonly repo.ProfileRow[]): void;
  /** Makes identities and merged counts of these profiles complete (one query for all missing). */
  loadViews(tx: Queryable, profiles: ReadonlyArray<BatchProfile | null>): Promise<void>;
  addNodes(rows: readonly graph.NodeRow[]): void;
  /** The live profile an id stands for after this batch's merges so far. */
  survivor(id: string): BatchProfile | null;
  /** The live profile owning this identifier, as far as this batch knows. */
  ownerOf(workspaceId: string, id: Identifier): BatchProfile | null;
  createProfile(workspaceId: string, at: Date, source: Source): BatchProfile;
  /** Gives `profile` the identifier (creating its node, or moving it from another profile). */
  attach(profile: BatchProfile, id: Identifier, at: Date): void;
  /**
   * Records that an event linked two identifiers of one profile: kept when one of them is new here
   * or when the link caused a merge (`force`); two identifiers that already shared a profile are
   * already connected, and re-recording that on every event would only cost writes.
   */
  link(workspaceId: string, from: Identifier, to: Identifier, eventId: string | null, force?: boolean): void;
  /**
   * Merges one write into the profile, unless it would grow the profile's attributes past
   * TRAIT_LIMITS.profileAttributesBytes: then the profile is left exactly as it was.
   */
  applyTraits(
    profile: BatchProfile,
    update: TraitUpdate,
    time: WriteTime,
    source: Source,
    at: Date,
  ): TraitsOutcome;
  /** Merges `secondary` into `primary` (traits by their own field times, identifiers, history). */
  merge(primary: BatchProfile, secondary: BatchProfile, source: Source, at: Date): void;
  /** Records a profile.merged fact (the caller decides the grouping: one per event, one per API call). */
  mergedFact(workspaceId: string, primaryId: string, mergedIds: readonly string[], source: Source): void;
  /** Writes everything; throws StaleReadError when another writer won a race. */
  flush(tx: Queryable): Promise<void>;
}

export function profileFromRow(row: repo.ProfileRow): BatchProfile {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    traits: {
      email: row.email,
      first_name: row.first_name,
      last_name: row.last_name,
      attributes: row.attributes ?? {},
      field_times: row.field_times ?? {},
    },
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    isNew: false,
    dirty: false,
    mergedInto: null,
    identities: new Map(),
    mergedCount: 0,
    viewLoaded: false,
    attributesBytes: null,
  };
}

/**
 * `yieldNow` is called between units of CPU work of the flush (rows serialized): the caller's
 * cooperative scheduler (platform/cooperate.ts), shared with its own loop over events.
 */
export function createProfileBatch(yieldNow: () => Promise<void> = createYielder()): ProfileBatch {
  const profiles = new Map<string, BatchProfile>();
  const nodes = new Map<string, BatchNode>();
  const edges = new Map<
    string,
    { workspace_id: string; from_node: string; to_node: string; event_id: string | null }
  >();
  const lineage: repo.LineageWrite[] = [];
  const facts: OutboxFact[] = [];
  const moves: Array<{ workspaceId: string; from: string; to: string }> = [];

  const survivor = (id: string): BatchProfile | null => {
    let p = profiles.get(id) ?? null;
    for (let hops = 0; p?.mergedInto && hops < 1000; hops++) p = profiles.get(p.mergedInto) ?? null;
    return p;
  };

  const record = (
    p: BatchProfile,
    changes: FieldChange[],
    time: WriteTime,
    source: Source,
    mergedFrom: string | null,
  ) => {
    for (const c of changes) {
      const t = typeof time === 'number' ? time : time(c.path);
      lineage.push({
        workspace_id: p.workspaceId,
        profile_id: p.id,
        path: c.path,
        old_value: c.old,
        new_value: c.new,
        source_type: source.type,
        source_id: source.id,
        merged_from: mergedFrom,
        occurred_at: new Date(t).toISOString(),
      });
    }
  };

  const batch: ProfileBatch = {
    profiles,
    addLocked(rows) {
      for (const r of rows) if (!profiles.has(r.id)) profiles.set(r.id, profileFromRow(r));
    },
    async loadViews(tx, wanted) {
      const missing = wanted.filter((p): p is BatchProfile => p !== null && !p.viewLoaded);
      if (missing.length === 0) return;
      for (const v of await repo.loadResolverViews(tx, [...new Set(missing.map((p) => p.id))])) {
        const p = profiles.get(v.id)!;
        if (p.viewLoaded) continue;
        // Union with what this batch already attached (not yet written).
        for (const n of v.identities) {
          const t = n.type as IdentifierType;
          p.identities.set(t, (p.identities.get(t) ?? new Set()).add(n.value));
        }
        p.mergedCount += v.merged_count;
        p.viewLoaded = true;
      }
    },
    addNodes(rows) {
      for (const r of rows) {
        const k = nodeKey(r.workspace_id, r.type, r.value);
        if (nodes.has(k)) continue;
        nodes.set(k, {
          id: r.id,
          workspaceId: r.workspace_id,
          type: r.type,
          value: r.value,
          profileId: r.profile_id,
          firstSeen: r.first_seen,
          lastSeen: r.last_seen,
          isNew: false,
          dirty: false,
        });
      }
    },
    survivor,
    ownerOf(workspaceId, id) {
      const n = nodes.get(nodeKey(workspaceId, id.type, id.value));
      return n ? survivor(n.profileId) : null;
    },
    createProfile(workspaceId, at, source) {
      const p: BatchProfile = {
        id: newUuid(),
        workspaceId,
        traits: { email: null, first_name: null, last_name: null, attributes: {}, field_times: {} },
        createdAt: at,
        updatedAt: at,
        isNew: true,
        dirty: true,
        mergedInto: null,
        identities: new Map(),
        mergedCount: 0,
        viewLoaded: true,
        attributesBytes: 2,
      };
      profiles.set(p.id, p);
      facts.push({
        workspaceId,
        type: 'profile.created',
        data: {
          profile_id: p.id,
          created_at: at.toISOString(),
          ...(source.type === 'event' ? { source_event_id: source.id } : { source_api_key_id: source.id }),
        },
      });
      return p;
    },
    attach(profile, id, at) {
      const k = nodeKey(profile.workspaceId, id.type, id.value);
      const n = nodes.get(k);
      if (n) {
        if (n.profileId !== profile.id) {
          n.profileId = profile.id;
          n.dirty = true;
        }
      } else {
        nodes.set(k, {
          id: newUuid(),
          workspaceId: profile.workspaceId,
          type: id.type,
          value: id.value,
          profileId: profile.id,
          firstSeen: at,
          lastSeen: at,
          isNew: true,
          dirty: true,
        });
      }
      if (id.type !== 'anonymous_id')
        profile.identities.set(id.type, (profile.identities.get(id.type) ?? new Set()).add(id.value));
    },
    link(workspaceId, from, to, eventId, force = false) {
      const a = nodes.get(nodeKey(workspaceId, from.type, from.value));
      const b = nodes.get(nodeKey(workspaceId, to.type, to.value));
      if (!a || !b || a.id === b.id || (!force && !a.isNew && !b.isNew)) return;
      const k = `${a.id}|${b.id}`;
      if (!edges.has(k))
        edges.set(k, { workspace_id: workspaceId, from_node: a.id, to_node: b.id, event_id: eventId });
    },
    applyTraits(profile, update, time, source, at) {
      // In place: the batch owns its profiles' states (read from rows or created here), and a copy
      // per write would cost time in proportion to the profile instead of the write.
      const r = mergeTraitsInPlace(profile.traits, update, time);
      const limit = TRAIT_LIMITS.profileAttributesBytes;
      if (r.growth > 0) {
        let bytes = profile.attributesBytes === null ? null : profile.attributesBytes + r.growth;
        // The running figure is an upper bound: measure exactly before refusing anything.
        if (bytes === null || bytes > limit) bytes = jsonBytes(profile.traits.attributes);
        if (bytes > limit) {
          r.revert();
          profile.attributesBytes = null;
          return {
            applied: false,
            bytes,
            reason:
              `the profile's attributes would grow to ${bytes} bytes as JSON, over the limit of ${limit} ` +
              '(limit: attributes per profile); the traits were not applied',
          };
        }
        profile.attributesBytes = bytes;
      } else if (profile.attributesBytes !== null) profile.attributesBytes += r.growth;
      if (r.moved) {
        profile.dirty = true;
        if (at > profile.updatedAt) profile.updatedAt = at;
      }
      record(profile, r.changes, time, source, null);
      return { applied: true, changes: r.changes };
    },
    merge(primary, secondary, source, at) {
      if (primary.id === secondary.id) return;
      if (!primary.viewLoaded || !secondary.viewLoaded)
        throw new Error('merge needs both profiles’ views loaded');
      const s = secondary.traits;
      const time = timesOfProfile(s.field_times, secondary.updatedAt.getTime());
      // A merge is never refused for size (a person is one profile): the merged profile may exceed
      // the attributes limit, and then only writes that do not grow it are applied.
      const { changes, growth } = mergeTraitsInPlace(
        primary.traits,
        {
          email: s.email ?? undefined,
          first_name: s.first_name ?? undefined,
          last_name: s.last_name ?? undefined,
          attributes: s.attributes,
        },
        time,
      );
      if (primary.attributesBytes !== null) primary.attributesBytes += growth;
      primary.dirty = true;
      if (at > primary.updatedAt) primary.updatedAt = at;
      record(primary, changes, time, source, secondary.id);
      for (const [type, values] of secondary.identities) {
        const held = primary.identities.get(type) ?? new Set<string>();
        for (const v of values) held.add(v);
        primary.identities.set(type, held);
      }
      primary.mergedCount += 1 + secondary.mergedCount;
      secondary.mergedInto = primary.id;
      secondary.dirty = true;
      // Written nodes move with repointNodes at flush; this keeps ownerOf right for later events.
      for (const n of nodes.values()) if (n.profileId === secondary.id) n.profileId = primary.id;
      moves.push({ workspaceId: primary.workspaceId, from: secondary.id, to: primary.id });
    },
    mergedFact(workspaceId, primaryId, mergedIds, source) {
      facts.push({
        workspaceId,
        type: 'profile.merged',
        data: {
          primary_profile_id: primaryId,
          merged_profile_ids: [...mergedIds],
          ...(source.type === 'event' ? { source_event_id: source.id } : { source_api_key_id: source.id }),
        },
      });
    },
    async flush(tx) {
      const liveId = (id: string) => survivor(id)?.id ?? id;
      const writes: repo.ProfileWrite[] = [];
      for (const p of profiles.values()) {
        if (!p.dirty) continue;
        writes.push({
          id: p.id,
          workspace_id: p.workspaceId,
          email: p.traits.email,
          first_name: p.traits.first_name,
          last_name: p.traits.last_name,
          attributes: p.traits.attributes,
          field_times: p.traits.field_times,
          merged_into: p.mergedInto ? liveId(p.mergedInto) : null,
          created_at: p.createdAt.toISOString(),
        });
      }
      await repo.upsertProfiles(tx, writes, yieldNow);

      if (moves.length > 0) {
        const byWorkspace = new Map<string, Array<{ from: string; to: string }>>();
        for (const m of moves) {
          const list = byWorkspace.get(m.workspaceId) ?? [];
          list.push({ from: m.from, to: liveId(m.to) });
          byWorkspace.set(m.workspaceId, list);
        }
        for (const [workspaceId, list] of byWorkspace) {
          await graph.repointNodes(tx, list);
          await repo.moveMergedHistory(tx, workspaceId, list);
          await reassignOrders(tx, workspaceId, list);
        }
      }

      const nodeWrites: graph.NodeWrite[] = [];
      const fresh: string[] = [];
      for (const n of nodes.values()) {
        if (!n.dirty) continue;
        nodeWrites.push({
          id: n.id,
          workspace_id: n.workspaceId,
          type: n.type,
          value: n.value,
          profile_id: liveId(n.profileId),
          first_seen: n.firstSeen.toISOString(),
          last_seen: n.lastSeen.toISOString(),
        });
        if (n.isNew) fresh.push(n.id);
      }
      const written = await graph.upsertNodes(tx, nodeWrites);
      if (fresh.some((id) => !written.has(id))) {
        throw new StaleReadError('an identifier was linked by another writer meanwhile');
      }
      await graph.insertEdges(tx, [...edges.values()]);
      for (const l of lineage) l.profile_id = liveId(l.profile_id);
      await repo.insertLineage(tx, lineage, yieldNow);
      await writeOutboxMany(tx, facts);
    },
  };
  return batch;
}
