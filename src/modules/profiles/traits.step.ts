import type { Queryable } from '../../platform/db';
import { type Settlement, type StepResult, settled } from '../../platform/pipeline';
import type { BatchProfile, ProfileBatch } from './profile-batch';
import { type TraitUpdate, traitsFromPayload } from './traits';

/**
 * The pipeline's traits step: an identify event's traits merge into its profile (newer event time
 * wins per field, lineage recorded, docs/profiles.md). An event that would grow its profile past the
 * attributes limit is set aside, never dropped silently, and the profile stays exactly as it was.
 *
 * The merges identity resolution decided are carried out here too, each just before the traits of
 * the event that caused it: appends combine in the order they happen (a scalar meeting an array is
 * `[E, ...I]`), so a batch must apply merges and trait writes in arrival order, exactly as batches of
 * one event each would, or the same events would give other profiles depending on how they were cut.
 */

export interface TraitEvent {
  seq: number;
  eventId: string;
  eventType: string;
  payload: Record<string, unknown>;
  at: Date;
  /** The event's identity when it is an e-mail address (normalized). */
  email: string | null;
  profileId: string | null;
  /** Profiles this event merges into `primary` (decided by identity resolution), in that order. */
  merges?: ReadonlyArray<{ primary: string; secondary: string }>;
}

export async function applyTraits(
  tx: Queryable,
  events: readonly TraitEvent[],
  profiles: ProfileBatch,
  yieldNow: () => Promise<void>,
): Promise<StepResult> {
  // Before any merge of the batch: each event's profile is still the one resolution gave it.
  const updates = new Map<TraitEvent, TraitUpdate>();
  for (const e of events) {
    const profile = e.profileId ? profiles.survivor(e.profileId) : null;
    if (!profile) continue;
    const update = e.eventType === 'identify' ? traitsFromPayload(e.payload) : {};
    if (hasChange(update) || fillsEmail(e, update, profile)) updates.set(e, update);
  }
  // Only the profiles that may be written need their traits (the lock read their heads): one read.
  // The profiles a merge combines were read by resolution.
  await profiles.loadTraits(
    tx,
    [...updates.keys()].map((e) => e.profileId!),
  );
  const out: Array<[number, Settlement]> = [];
  for (const e of events) {
    const source = { type: 'event' as const, id: e.eventId };
    for (const m of e.merges ?? []) {
      await yieldNow();
      profiles.merge(profiles.survivor(m.primary)!, profiles.survivor(m.secondary)!, source, e.at);
    }
    const update = updates.get(e);
    if (!update) continue;
    await yieldNow();
    const profile = profiles.survivor(e.profileId!)!;
    // An e-mail identity fills an empty e-mail field (so `email=` finds the profile) under the
    // same newer-wins rule as a trait; an earlier event of the batch may have filled it already.
    if (fillsEmail(e, update, profile)) update.email = e.email!;
    if (!hasChange(update)) continue;
    const r = profiles.applyTraits(profile, update, e.at.getTime(), source, e.at);
    // Retryable once the profile has room (POST /tenant/dead-letters/{id}/retry).
    if (!r.applied) out.push([e.seq, { kind: 'dead_letter', reason: r.reason }]);
  }
  return settled(out);
}

const hasChange = (u: TraitUpdate): boolean =>
  u.email !== undefined || u.first_name !== undefined || u.last_name !== undefined || !!u.attributes;

const fillsEmail = (e: TraitEvent, u: TraitUpdate, profile: BatchProfile): boolean =>
  e.email !== null && u.email === undefined && profile.traits.email === null;
