import { createYielder } from '../../platform/cooperate';
import type { Queryable } from '../../platform/db';
import { newUuid } from '../../platform/ids';
import type { OutboxFact } from '../outbox';
import { insertLineage, type LineageWrite } from './lineage.repo';
import { moveMergedHistory } from './merge-history';
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
 * The profiles' unit of work: load the rows a change touches (locked), change them in memory, then
 * write them back with one statement per table (profiles, lineage). The worker uses it for a whole
 * claimed batch of events (one round trip per table, not per event); the API uses it for one merge
 * or one profile write, so both follow the same rules. The identity graph has its own unit
 * (identity/graph-batch.ts); the facts (profile.created, profile.merged) are collected in `facts`
 * for the caller to write to the outbox with the rest of the transaction's effects.
 */

/** Who caused a change: recorded in lineage and in merge / creation facts. */
export interface Source {
  type: 'event' | 'api_key';
  id: string | null;
}

export interface BatchProfile {
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
   * Size of `traits.attributes` as JSON, at least: measured on the first write that grows them,
   * then kept up to date by each write's growth (null until measured).
   */
  attributesBytes: number | null;
}

/** What applyTraits did: the changes, or nothing at all because the profile would grow too big. */
export type TraitsOutcome =
  | { applied: true; changes: FieldChange[] }
  | { applied: false; reason: string; bytes: number };

/** A lost race with another writer (an identifier created or a profile merged meanwhile): retry. */
export class StaleReadError extends Error {
  override readonly name = 'StaleReadError';
}

export interface ProfileBatch {
  readonly profiles: ReadonlyMap<string, BatchProfile>;
  /** The facts this unit caused (profile.created, profile.merged), for the outbox. */
  readonly facts: readonly OutboxFact[];
  /** Adds rows read (and locked) by the caller. */
  addLocked(rows: readonly repo.ProfileRow[]): void;
  /** The live profile an id stands for after this unit's merges so far. */
  survivor(id: string): BatchProfile | null;
  createProfile(workspaceId: string, at: Date, source: Source): BatchProfile;
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
  /** Merges `secondary`'s traits and history into `primary` (traits by their own field times). */
  merge(primary: BatchProfile, secondary: BatchProfile, source: Source, at: Date): void;
  /** Records a profile.merged fact (the caller decides the grouping: one per event, one per API call). */
  mergedFact(workspaceId: string, primaryId: string, mergedIds: readonly string[], source: Source): void;
  /** This unit's merges, by workspace, each pointing at its final survivor (for the other owners). */
  moves(): Map<string, Array<{ from: string; to: string }>>;
  /** Writes profiles, the merged-away profiles' re-pointing and lineage. */
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
    attributesBytes: null,
  };
}

/**
 * `yieldNow` is called between units of CPU work of the flush (rows serialized): the caller's
 * cooperative scheduler (platform/cooperate.ts), shared with its own loop over events.
 */
export function createProfileBatch(yieldNow: () => Promise<void> = createYielder()): ProfileBatch {
  const profiles = new Map<string, BatchProfile>();
  const lineage: LineageWrite[] = [];
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
    facts,
    addLocked(rows) {
      for (const r of rows) if (!profiles.has(r.id)) profiles.set(r.id, profileFromRow(r));
    },
    survivor,
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
      secondary.mergedInto = primary.id;
      secondary.dirty = true;
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
    moves() {
      const byWorkspace = new Map<string, Array<{ from: string; to: string }>>();
      for (const m of moves) {
        const list = byWorkspace.get(m.workspaceId) ?? [];
        list.push({ from: m.from, to: survivor(m.to)?.id ?? m.to });
        byWorkspace.set(m.workspaceId, list);
      }
      return byWorkspace;
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
      for (const [workspaceId, list] of batch.moves()) await moveMergedHistory(tx, workspaceId, list);
      for (const l of lineage) l.profile_id = liveId(l.profile_id);
      await insertLineage(tx, lineage, yieldNow);
    },
  };
  return batch;
}
