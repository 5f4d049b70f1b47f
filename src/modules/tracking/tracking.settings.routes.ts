import { Type } from 'typebox';
import { principalOf } from '../../platform/http/principal';
import type { App } from '../../platform/http/types';
import { tags } from './tracking.schemas';
import { rudderSourceConfig, segmentSettings } from './tracking.settings';

/** The documents the browser libraries fetch at load, pointing them back at this service. */
export function registerSettingsRoutes(app: App): void {
  app.get(
    '/v1/projects/:writeKey/settings',
    {
      // Public, as Segment's own: the document holds nothing the page does not have already (its
      // key, this host). The key is checked where it matters, on every call the library then sends.
      config: { auth: 'public', rateTier: 'none' },
      schema: {
        tags,
        summary:
          "Settings for Segment's browser library (its `cdnURL`): send events here, load nothing else.",
        description:
          'No key needed: any `writeKey` gets a document naming it; the calls it leads to are checked ' +
          'like every other (key, scope, allowed origins).',
        params: Type.Object({ writeKey: Type.String({ maxLength: 200 }) }),
        response: { 200: Type.Record(Type.String(), Type.Unknown()) },
      },
    },
    async (req, reply) => {
      void reply.header('access-control-allow-origin', '*');
      return segmentSettings(req.params.writeKey, req.protocol, req.host);
    },
  );
  for (const url of ['/sourceConfig', '/sourceConfig/']) {
    app.get(
      url,
      {
        config: { auth: 'ingest', cors: true, keyInUrl: true },
        schema: {
          tags,
          summary:
            "Source configuration for RudderStack's browser library (its `configUrl`): no destinations.",
          querystring: Type.Object(
            { writeKey: Type.Optional(Type.String({ maxLength: 200 })) },
            { additionalProperties: true },
          ),
          response: { 200: Type.Record(Type.String(), Type.Unknown()) },
        },
      },
      async (req) => rudderSourceConfig(principalOf(req)),
    );
  }
}
