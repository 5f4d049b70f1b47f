import type { Principal } from '../../platform/http/principal';

/**
 * The settings documents the browser libraries fetch when they load (docs/ingestion.md). Each points
 * the library at this service and at nothing else: no destinations, no remote plugins or
 * middleware, no metrics or error reports sent elsewhere.
 */

/**
 * Segment's `GET {cdnURL}/v1/projects/{writeKey}/settings` for analytics-next. Its only integration
 * is "Segment.io" (the library's own delivery plugin), with `apiHost` this service's `/v1`, as the
 * browser reached it (the request's host and scheme, which honour TRUST_PROXY).
 */
export function segmentSettings(writeKey: string, protocol: string, host: string) {
  return {
    integrations: {
      'Segment.io': {
        apiKey: writeKey,
        apiHost: `${host}/v1`,
        protocol,
        unbundledIntegrations: [],
        addBundledMetadata: true,
        maybeBundledConfigIds: {},
        versionSettings: { version: '4.4.7', componentTypes: ['browser'] },
      },
    },
    plan: {
      track: { __default: { enabled: true, integrations: {} } },
      identify: { __default: { enabled: true } },
      group: { __default: { enabled: true } },
    },
    edgeFunction: {},
    analyticsNextEnabled: true,
    middlewareSettings: {},
    enabledMiddleware: {},
    // 0: the library sends no usage metrics (to Segment's own endpoint).
    metrics: { sampleRate: 0 },
    legacyVideoPluginsEnabled: false,
    remotePlugins: [],
  };
}

/**
 * RudderStack's `GET {configUrl}/sourceConfig/?writeKey=…` for @rudderstack/analytics-js: an
 * enabled source with no destinations (none loads in the browser, none receives a copy), and its
 * error reports and metrics off. The events go to the `dataPlaneUrl` the page gives `load()`.
 */
export function rudderSourceConfig(key: Principal) {
  return {
    isHosted: false,
    source: {
      id: key.id,
      name: 'cdp',
      enabled: true,
      config: {
        statsCollection: { errors: { enabled: false }, metrics: { enabled: false } },
      },
      destinations: [],
    },
  };
}
