/**
 * The tracking module: the Segment HTTP Tracking API shape (`/v1/track` … `/v1/batch`) and the
 * settings documents the browser libraries load, so that Segment's and RudderStack's own clients
 * send here unchanged but for their host (docs/ingestion.md). It owns no table: events go through
 * the ingest module, an account's traits through the accounts module.
 */

export { TRACKING_LIMITS } from './tracking.body';
export { ANONYMOUS_ID_NAMESPACE, anonymousIdOf, mapMessage } from './tracking.mapping';
export { registerTrackingRoutes } from './tracking.routes';
