/**
 * The identity module's public API: what other modules may call. Tables: identity_nodes,
 * identity_edges, identifier_suppressions. Identifiers and resolver decisions are pure functions.
 */

export { createGraphBatch, type GraphBatch, type GraphView } from './graph-batch';
export {
  BUILTIN_JUNK,
  classifyAnonymousId,
  classifyIdentity,
  IDENTIFIER_TYPES,
  type Identifier,
  type IdentifierType,
  identifierKey,
  junkSet,
  junkSetFromSettings,
  legacyIdentifier,
  MAX_IDENTIFIER_LENGTH,
  normalizeEmail,
  normalizeStoredIdentifier,
  normalizeText,
  suppressionHash,
  suppressionHashes,
} from './identifiers';
// The graph's writes, for the profiles unit of work (profile-batch) that changes profiles and graph
// together in one transaction.
export {
  deleteNode,
  type EdgeRow,
  findNodeById,
  findNodes,
  foldNode,
  insertEdges,
  listIdentifiersOfProfiles,
  type NodeKey,
  type NodeRef,
  type NodeRow,
  type NodeWrite,
  renameNode,
  repointNodes,
  scanLookAlikeNodes,
  upsertNodes,
} from './identity.repo';
export {
  dropSpentHorizons,
  type GraphEdgeView,
  type GraphNodeView,
  isSuppressed,
  liftSuppression,
  readGraphOfProfile,
  suppressIdentifiers,
} from './identity.service';
export { identifiersOfProfiles, identityPersonalData, subjectMatcher } from './personal-data';
export {
  conflicts,
  type Decision,
  decide,
  MERGE_CAP,
  type OwnerView,
  type Refusal,
  type ResolveInput,
} from './resolve';
// The processing pipeline's step.
export { orderingTokens, type ProfilesPort, type ResolvableEvent, resolveIdentities } from './resolve.step';
export { findSuppressed } from './suppressions.repo';
export { registerSuppressionRoutes } from './suppressions.routes';
