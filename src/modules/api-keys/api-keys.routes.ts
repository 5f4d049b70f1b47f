import { Type } from 'typebox';
import { Envelope, ok, PageEnvelope } from '../../platform/http/envelope';
import { paged, pagedQuery, pageOf } from '../../platform/http/paging';
import { workspaceOf } from '../../platform/http/principal';
import type { App, AppDeps } from '../../platform/http/types';
import { ApiKeyCreatedSchema, ApiKeySchema, CreateApiKeyBody } from './api-keys.schemas';
import { createKey, listKeys, revokeKey } from './api-keys.service';

const tags = ['api keys'];
const security = [{ apiKey: [] }];

export function registerApiKeyRoutes(app: App, deps: AppDeps): void {
  app.post(
    '/tenant/apikeys',
    {
      config: { auth: 'admin', audit: { action: 'apikey.create', target: 'api_key' } },
      schema: {
        tags,
        security,
        summary: 'Create an API key. The raw `api_key` appears in this response only.',
        body: CreateApiKeyBody,
        response: { 200: Envelope(ApiKeyCreatedSchema) },
      },
    },
    async (req) => {
      const key = await createKey(deps.db, workspaceOf(req), req.body);
      // Its origins answer preflights on this process from the moment the key is shown.
      if (key.allowed_domains.length > 0) await deps.origins.changed(key.id);
      return ok(key);
    },
  );

  app.get(
    '/tenant/apikeys',
    {
      config: { auth: 'admin' },
      schema: {
        tags,
        security,
        summary: 'List the workspace’s active keys (metadata only, never the secret).',
        querystring: pagedQuery(),
        response: { 200: PageEnvelope(ApiKeySchema) },
      },
    },
    async (req) =>
      paged(await listKeys(deps.db, deps.cursors, workspaceOf(req), pageOf(req, deps.cursors, 'apikeys'))),
  );

  app.delete(
    '/tenant/apikeys/:key_id',
    {
      config: { auth: 'admin', audit: { action: 'apikey.revoke', target: 'api_key' } },
      schema: {
        tags,
        security,
        summary: 'Revoke a key. It fails on the very next request, on every instance.',
        params: Type.Object({ key_id: Type.String({ maxLength: 200 }) }),
        response: { 200: Envelope(Type.Object({ id: Type.String(), revoked: Type.Literal(true) })) },
      },
    },
    async (req) => {
      await revokeKey(deps.db, deps.keys, deps.origins, workspaceOf(req), req.params.key_id);
      return ok({ id: req.params.key_id, revoked: true as const });
    },
  );
}
