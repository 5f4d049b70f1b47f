import { createYielder } from '../../platform/cooperate';
import { newUuid } from '../../platform/ids';
import type { OutboxFact } from '../outbox';
import { factProfile } from './fact-profile';
import { insertLineage, type LineageWrite } from './lineage.repo';
import { moveMergedHistory } from './merge-history';
import {
  type BatchProfile,
  type ProfileBatch,
  profileFromHead,
  profileFromRow,
  type Source,
} from './profile-batch.types';
import * as repo from './profiles.repo';
import {
  type FieldChange,
  jsonBytes,
  mergeTraitsInPlace,
  TRAIT_LIMITS,
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

export {
  type BatchProfile,
  type ProfileBatch,
  profileFromRow,
  type Source,
  StaleReadError,
  type TraitsOutcome,
} from './profile-batch.types';

/**
 * `yieldNow` is called between units of CPU work of the flush (rows serialized): the caller's
 * cooperative scheduler (platform/cooperate.ts), shared with its own loop over events.
 */
export function createProfileBatch(yieldNow: () => Promise<void> = createYielder()): ProfileBatch {
  const profiles = new Map<string, BatchProfile>();
  const lineage: LineageWrite[] = [];
  /** The facts, each with the profile it is about (its `profile` is filled in by `facts()`). */
  const facts: Array<{ fact: OutboxFact; subject: string }> = [];
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
    subjects: () => [...new Set(facts.map((f) => f.subject))],
    facts(identitiesOf) {
      return facts.map(({ fact, subject }) => {
        const p = profiles.get(subject);
        return p ? { ...fact, data: { ...fact.data, profile: factProfile(p, identitiesOf(subject)) } } : fact;
      });
    },
    addLocked(rows) {
      for (const r of rows) if (!profiles.has(r.id)) profiles.set(r.id, profileFromRow(r));
    },
    addHeads(rows) {
      for (const r of rows) if (!profiles.has(r.id)) profiles.set(r.id, profileFromHead(r));
    },
    async loadTraits(tx, ids) {
      const heads = new Map<string, BatchProfile>();
      for (const id of ids) {
        const p = survivor(id);
        if (p && !p.loaded) heads.set(p.id, p);
      }
      for (const r of await repo.readTraits(tx, [...heads.keys()])) {
        const p = heads.get(r.id)!;
        p.traits = {
          email: r.email,
          first_name: r.first_name,
          last_name: r.last_name,
          attributes: r.attributes ?? {},
          field_times: r.field_times ?? {},
        };
        p.loaded = true;
      }
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
        loaded: true,
        mergedInto: null,
        attributesBytes: 2,
      };
      profiles.set(p.id, p);
      facts.push({
        subject: p.id,
        fact: {
          workspaceId,
          type: 'profile.created',
          data: {
            profile_id: p.id,
            created_at: at.toISOString(),
            ...(source.type === 'event' ? { source_event_id: source.id } : { source_api_key_id: source.id }),
          },
        },
      });
      return p;
    },
    applyTraits(profile, update, time, source, at) {
      mustBeLoaded(profile);
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
      mustBeLoaded(primary);
      mustBeLoaded(secondary);
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
        subject: primaryId,
        fact: {
          workspaceId,
          type: 'profile.merged',
          data: {
            primary_profile_id: primaryId,
            merged_profile_ids: [...mergedIds],
            ...(source.type === 'event' ? { source_event_id: source.id } : { source_api_key_id: source.id }),
          },
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
        mustBeLoaded(p);
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

/** A head-only profile written back would lose its traits: never let that happen quietly. */
function mustBeLoaded(p: BatchProfile): void {
  if (!p.loaded) throw new Error(`profile ${p.id} was changed before its traits were read (loadTraits)`);
}
