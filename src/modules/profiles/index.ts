/**
 * The profiles module's public API: what other modules may call. Tables: profiles,
 * profile_lineage, profile_erasures. Trait rules are pure functions (./traits).
 */

export { type ErasureView, eraseProfile } from './erasure.service';
export { type GraphView, getGraph, type MergeResult, mergeProfiles } from './merge.service';
export {
  type BatchProfile,
  createProfileBatch,
  type ProfileBatch,
  type Source,
  StaleReadError,
} from './profile-batch';
export {
  findLiveProfileId,
  getLiveProfiles,
  getProfile,
  type ProfileView,
  presentProfile,
  readFollowingMerges,
  resolveProfileId,
} from './profiles.read';
// The one lock order of every writer, and what the identity resolver reads of a profile.
export {
  countMergedInto,
  type LockedProfiles,
  lockProfileHeads,
  lockProfileKeys,
  lockProfiles,
  type ProfileHead,
  type ProfileRow,
} from './profiles.repo';
export { lockInto, storeOrderSummary, withRetry } from './profiles.write';
// The intelligence module's scores, written onto the profile row.
export { type ProfileScores, storeScores } from './scores.repo';
export {
  countTraitKeys,
  type Json,
  type JsonObject,
  TOO_MANY_TRAIT_KEYS,
  TRAIT_LIMITS,
  type TraitUpdate,
  traitsFromPayload,
} from './traits';
// The processing pipeline's step.
export { applyTraits, type TraitEvent } from './traits.step';
