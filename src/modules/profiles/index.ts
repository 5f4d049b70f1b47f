/**
 * The profiles module's public API: what other modules and the workflows may call. Tables:
 * profiles, profile_lineage, profile_consent, profile_erasures. Trait rules are pure functions (./traits).
 */

// Consent per category (docs/profiles.md, "Consent"): the pipeline step, the PUT, merges, webhooks.
export { type ConsentChange, consentAllows } from './consent';
export { moveConsent } from './consent.repo';
export {
  type ConsentView,
  consentStates,
  readConsent,
  recordConsentWrites,
} from './consent.service';
export { lockProfileFamily, recordErasure } from './erasure';
// Workspace exports (GET /tenant/exports/profiles, a segment's members): finished lines, and where a profile stands.
export { exportProfilesPage, findProfileKey, PROFILE_EXPORT_FIELDS } from './export.repo';
export { FACT_LIMITS, type FactProfile, type ProfileSummary } from './fact-profile';
export { profilesPersonalData } from './personal-data';
export {
  type BatchProfile,
  createProfileBatch,
  type ProfileBatch,
  type Source,
  StaleReadError,
} from './profile-batch';
export {
  findProfileIdsByEmail,
  findSurvivors,
  getProfileSummaries,
  listMergedAway,
  listMergedIds,
  liveProfileSliceEnd,
  scanLookAlikeEmails,
} from './profile-reads.repo';
export {
  findLiveProfileId,
  getLiveProfiles,
  getProfile,
  type ProfileView,
  presentProfile,
  readFollowingMerges,
  readLiveProfile,
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
  setNormalizedEmails,
} from './profiles.repo';
export { checkAttributeWrite, lockInto, storeOrderSummary, withRetry } from './profiles.write';
// The intelligence module's scores, written onto the profile row, and their distributions.
export { mergeScoreDistributions } from './score-distributions';
export {
  CLV_BUCKET_EDGES,
  type ProfileScores,
  readScoreDistributionSlice,
  readScoreDistributions,
  type ScoreDistributionRows,
  type SeqRange,
  storeScores,
} from './scores.repo';
export { countProfiles } from './stats.repo';
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
