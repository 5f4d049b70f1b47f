import { type Settlement, type StepResult, settled } from '../../platform/pipeline';
import type { ProfileBatch } from './profile-batch';
import { traitsFromPayload } from './traits';

/**
 * The pipeline's traits step: an identify event's traits merge into its profile (newer event time
 * wins per field, lineage recorded, docs/profiles.md). An event that would grow its profile past the
 * attributes limit is set aside, never dropped silently, and the profile stays exactly as it was.
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
}

export async function applyTraits(
  events: readonly TraitEvent[],
  profiles: ProfileBatch,
  yieldNow: () => Promise<void>,
): Promise<StepResult> {
  const out: Array<[number, Settlement]> = [];
  for (const e of events) {
    const profile = e.profileId ? profiles.survivor(e.profileId) : null;
    if (!profile) continue;
    await yieldNow();
    const update = e.eventType === 'identify' ? traitsFromPayload(e.payload) : {};
    // An e-mail identity fills an empty e-mail field (so `email=` finds the profile) under the
    // same newer-wins rule as a trait.
    if (e.email !== null && update.email === undefined && profile.traits.email === null) {
      update.email = e.email;
    }
    if (
      update.email === undefined &&
      update.first_name === undefined &&
      update.last_name === undefined &&
      !update.attributes
    ) {
      continue;
    }
    const r = profiles.applyTraits(profile, update, e.at.getTime(), { type: 'event', id: e.eventId }, e.at);
    // Retryable once the profile has room (POST /tenant/dead-letters/{id}/retry).
    if (!r.applied) out.push([e.seq, { kind: 'dead_letter', reason: r.reason }]);
  }
  return settled(out);
}
