import type { Queryable } from '../../platform/db';
import type { OutboxFact } from '../outbox';
import type * as repo from './profiles.repo';
import type { FieldChange, TraitState, TraitUpdate, WriteTime } from './traits';

/** The vocabulary of the profiles' unit of work (profile-batch.ts): what it holds and offers. */

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
  /**
   * False for a profile locked by its head only (lockProfileHeads): of its traits only `email` is
   * known until loadTraits reads the rest. Changing or merging it before then is a bug, and throws.
   */
  loaded: boolean;
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
  /** The profiles the unit's facts are about (for the caller to read their identifiers). */
  subjects(): string[];
  /**
   * The facts this unit caused (profile.created, profile.merged), for the outbox, each carrying its
   * profile as the unit leaves it (FactProfile) with the identifiers `identitiesOf` gives.
   */
  facts(identitiesOf: (profileId: string) => ReadonlyArray<{ type: string; value: string }>): OutboxFact[];
  /** Adds rows read (and locked) by the caller. */
  addLocked(rows: readonly repo.ProfileRow[]): void;
  /** Adds profiles the caller locked by their heads only (their traits are read by loadTraits). */
  addHeads(rows: readonly repo.ProfileHead[]): void;
  /** Reads the traits of these profiles' survivors where only their heads are known: one statement. */
  loadTraits(tx: Queryable, ids: Iterable<string>): Promise<void>;
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
    ...profileFromHead(row),
    traits: {
      email: row.email,
      first_name: row.first_name,
      last_name: row.last_name,
      attributes: row.attributes ?? {},
      field_times: row.field_times ?? {},
    },
    loaded: true,
  };
}

export function profileFromHead(row: repo.ProfileHead): BatchProfile {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    traits: { email: row.email, first_name: null, last_name: null, attributes: {}, field_times: {} },
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    isNew: false,
    dirty: false,
    loaded: false,
    mergedInto: null,
    attributesBytes: null,
  };
}
