/** The api-keys module's public API: what the composition root and other modules may use. */

export { registerApiKeyRoutes } from './api-keys.routes';
export type { ApiKeyView, CreatedApiKey, NewKeyInput } from './api-keys.service';
export {
  browserOriginSource,
  createKey,
  describeActiveKey,
  identifyKey,
  SECRET_SHAPE,
} from './api-keys.service';
export type { KeyCacheStats, KeyResolver, KeyResolverOptions, ResolvedKey } from './key-resolver';
export { createKeyResolver } from './key-resolver';
export type { RevocationBroadcast, RevocationOptions, Revocations, RevocationTarget } from './revocation';
// The cluster invalidation protocol, also used by the workspace settings cache.
export { createRevocations } from './revocation';
