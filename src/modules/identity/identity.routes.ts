import { Envelope, ok } from '../../platform/http/envelope';
import type { App, AppDeps } from '../../platform/http/types';
import { GraphParams, GraphSchema, MergeBody, MergeResultSchema } from './identity.schemas';
import * as identity from './identity.service';

const tags = ['identity'];
const security = [{ apiKey: [] }];

export function registerIdentityRoutes(app: App, deps: AppDeps): void {
  app.post(
    '/identity/merge',
    {
      config: { auth: 'write' },
      schema: {
        tags,
        security,
        summary:
          'Merge profiles into `primary_profile_id` (one transaction). Merged-away ids keep resolving to the ' +
          'primary; a `profile.merged` webhook fires. Refused (409) past 100 merged ids per profile.',
        body: MergeBody,
        response: { 200: Envelope(MergeResultSchema) },
      },
    },
    async (req) =>
      ok(
        await identity.mergeProfiles(
          deps.db,
          deps.log,
          req.apiKey!.workspaceId,
          req.apiKey!.id,
          req.body.primary_profile_id,
          req.body.secondary_profile_ids,
        ),
      ),
  );

  app.get(
    '/identity/graph/:profile_id',
    {
      config: { auth: 'read' },
      schema: {
        tags,
        security,
        summary: 'The profile’s identity graph: identifier nodes, the events that linked them, merged ids.',
        params: GraphParams,
        response: { 200: Envelope(GraphSchema) },
      },
    },
    async (req) => ok(await identity.getGraph(deps.db, req.apiKey!.workspaceId, req.params.profile_id)),
  );
}
