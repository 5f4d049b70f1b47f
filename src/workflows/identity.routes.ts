import { Envelope, ok } from '../platform/http/envelope';
import { principalOf, workspaceOf } from '../platform/http/principal';
import type { App, AppDeps } from '../platform/http/types';
import { GraphParams, GraphSchema, MergeBody, MergeResultSchema } from './identity.schemas';
import { getGraph } from './identity-graph';
import { mergeProfiles } from './merge';

/** The identity routes: a merge asked for by a person, and the graph of a profile (both span modules). */

const tags = ['identity'];
const security = [{ apiKey: [] }];

export function registerIdentityRoutes(app: App, deps: AppDeps): void {
  app.post(
    '/identity/merge',
    {
      config: {
        auth: 'write',
        audit: { action: 'identity.merge', target: 'profile', id: 'answer.primary_profile_id' },
      },
      schema: {
        tags,
        security,
        summary:
          'Merge profiles into `primary_profile_id` (one transaction). Merged-away ids keep resolving to the ' +
          'primary; a `profile.merged` webhook fires. Refused (409) past the workspace’s merge cap ' +
          '(`merge_cap` in /tenant/settings, default 100 merged ids per profile).',
        body: MergeBody,
        response: { 200: Envelope(MergeResultSchema) },
      },
    },
    async (req) => {
      const ws = workspaceOf(req);
      const { merge_cap } = await deps.settings.read(deps.db, ws);
      return ok(
        await mergeProfiles(
          deps.db,
          deps.log,
          ws,
          principalOf(req).id,
          req.body.primary_profile_id,
          req.body.secondary_profile_ids,
          merge_cap,
        ),
      );
    },
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
    async (req) => ok(await getGraph(deps.db, workspaceOf(req), req.params.profile_id)),
  );
}
