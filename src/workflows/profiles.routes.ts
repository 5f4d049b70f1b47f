import {
  DeleteProfileQuery,
  ErasureSchema,
  ProfileIdParams,
  ProfileSchema,
  UpsertProfileBody,
} from '../modules/profiles/profiles.schemas';
import { Envelope, ok } from '../platform/http/envelope';
import { principalOf, workspaceOf } from '../platform/http/principal';
import type { App, AppDeps } from '../platform/http/types';
import { eraseProfile } from './erasure';
import { upsertProfile } from './profile-write';

/**
 * The profile writes whose work spans modules: an API write (identifiers, traits, segment work) and
 * an erasure (every owner's rows). The reads are the profiles module's own routes.
 */

const tags = ['profiles'];
const security = [{ apiKey: [] }];

export function registerProfileWriteRoutes(app: App, deps: AppDeps): void {
  app.post(
    '/tenant/profiles',
    {
      config: { auth: 'write' },
      schema: {
        tags,
        security,
        summary:
          'Create or update a profile: with `id` update it (404 if unknown); else match by `identity`, then ' +
          '`email`; else create. Traits merge by the trait rules; lineage names the API key.',
        body: UpsertProfileBody,
        response: { 200: Envelope(ProfileSchema) },
      },
    },
    async (req) => ok(await upsertProfile(deps.db, workspaceOf(req), principalOf(req).id, req.body)),
  );

  app.delete(
    '/tenant/profiles/:id',
    {
      config: { auth: 'write' },
      schema: {
        tags,
        security,
        summary:
          'Erase a profile (and the profiles merged into it): events, identifiers, lineage; orders lose the ' +
          'link. `suppress=true` also blocks its identifiers from creating a profile again.',
        params: ProfileIdParams,
        querystring: DeleteProfileQuery,
        response: { 200: Envelope(ErasureSchema) },
      },
    },
    async (req) =>
      ok(
        await eraseProfile(deps.db, deps.log, deps.personalData, workspaceOf(req), req.params.id, {
          suppress: req.query.suppress ?? false,
          apiKeyId: principalOf(req).id,
        }),
      ),
  );
}
