import { Envelope, ok, PageEnvelope } from '../../platform/http/envelope';
import { paged, pageOf } from '../../platform/http/paging';
import { workspaceOf } from '../../platform/http/principal';
import type { App, AppDeps } from '../../platform/http/types';
import { readConsent } from './consent.service';
import * as profiles from './profiles.read';
import {
  LineageSchema,
  ListProfilesQuery,
  PageOnlyQuery,
  ProfileIdParams,
  ProfileSchema,
  ProfileWithConsentSchema,
  TimelineEventSchema,
} from './profiles.schemas';

const tags = ['profiles'];
const security = [{ apiKey: [] }];

export function registerProfileRoutes(app: App, deps: AppDeps): void {
  app.get(
    '/tenant/profiles',
    {
      config: { auth: 'read' },
      schema: {
        tags,
        security,
        summary: 'List unified profiles (oldest first); filter by exact `email` or any `identity`.',
        querystring: ListProfilesQuery,
        response: { 200: PageEnvelope(ProfileSchema) },
      },
    },
    async (req) => {
      const { email, identity } = req.query;
      const page = pageOf(req, deps.cursors, 'profiles');
      return paged(
        await profiles.listProfiles(deps.db, deps.cursors, workspaceOf(req), page, { email, identity }),
      );
    },
  );

  app.get(
    '/tenant/profiles/:id',
    {
      config: { auth: 'read' },
      schema: {
        tags,
        security,
        summary:
          'Read one profile, with its consent per category. A merged-away id answers with the surviving profile.',
        params: ProfileIdParams,
        response: { 200: Envelope(ProfileWithConsentSchema) },
      },
    },
    async (req) => {
      const ws = workspaceOf(req);
      const profile = await profiles.getProfile(deps.db, ws, req.params.id);
      return ok({ ...profile, consent: await readConsent(deps.db, ws, profile.id) });
    },
  );

  app.get(
    '/tenant/profiles/:id/events',
    {
      config: { auth: 'read' },
      schema: {
        tags,
        security,
        summary: 'The profile’s processed events, newest first (by event time).',
        params: ProfileIdParams,
        querystring: PageOnlyQuery,
        response: { 200: PageEnvelope(TimelineEventSchema) },
      },
    },
    async (req) => {
      // Bound to the id as written: a merged-away id keeps its own cursors, not the survivor's.
      const page = pageOf(req, deps.cursors, 'profile-events', req.params.id);
      return paged(
        await profiles.listProfileEvents(deps.db, deps.cursors, workspaceOf(req), req.params.id, page),
      );
    },
  );

  app.get(
    '/tenant/profiles/:id/lineage',
    {
      config: { auth: 'read' },
      schema: {
        tags,
        security,
        summary: 'Every field-level change of the profile, newest first: path, old, new, source, time.',
        params: ProfileIdParams,
        querystring: PageOnlyQuery,
        response: { 200: PageEnvelope(LineageSchema) },
      },
    },
    async (req) => {
      const page = pageOf(req, deps.cursors, 'profile-lineage', req.params.id);
      return paged(await profiles.listLineage(deps.db, deps.cursors, workspaceOf(req), req.params.id, page));
    },
  );
}
