/**
 * Workflows: what spans modules, written once and called by every entry point. They sit above the
 * modules (they import the modules' public APIs; no module imports them) and below the entry points
 * (the routes registered here, the event pipeline in modules/processing, the job runner).
 *
 *   merge           commitUnits: a unit of profile and graph changes with every effect of its merges;
 *                   mergeProfiles (POST /identity/merge)
 *   profile-write   upsertProfile (POST /tenant/profiles)
 *   consent         applyConsentChoices (the pipeline's step), setConsent (PUT /tenant/profiles/{id}/consent)
 *   erasure         eraseProfile (DELETE /tenant/profiles/{id})
 *   identity-graph  getGraph (GET /identity/graph/{id})
 *   exports         exportChunks (GET /tenant/exports/…): a workspace's records as a streamed file
 *   repair          one-off repairs of data older versions left wrong, run as jobs
 *   retention       the sweep of expired rows, over the personal-data registry, run as jobs
 */
export { applyConsentChoices, type ConsentAnswer, setConsent } from './consent';
export { type ErasureView, eraseProfile } from './erasure';
export { EXPORT_KINDS, type ExportKind, type ExportRequest, exportChunks, exportColumns } from './exports';
export { registerExportRoutes } from './exports.routes';
export { registerIdentityRoutes } from './identity.routes';
export { type GraphView, getGraph } from './identity-graph';
export {
  applyMergeEffects,
  commitUnits,
  type MergeResult,
  type Moves,
  mergeProfiles,
  staleLink,
} from './merge';
export { type UpsertProfileInput, upsertProfile } from './profile-write';
export { registerProfileWriteRoutes } from './profiles.routes';
export {
  LOOK_ALIKES_QUEUE,
  type LookAlikeReport,
  REPAIR_QUEUE,
  type RepairReport,
  registerRepairJobs,
  repairLookAlikeIdentifiers,
  repairStrandedOrders,
} from './repair';
export {
  enqueueSweep,
  RETENTION_QUEUE,
  type RetentionPayload,
  registerRetentionJobs,
  type SweepReport,
  sweepWorkspace,
} from './retention';
