import { noteAudit } from '../../platform/http/audit';
import { Envelope, ok } from '../../platform/http/envelope';
import { workspaceOf } from '../../platform/http/principal';
import type { App, AppDeps } from '../../platform/http/types';
import { SettingsPatchSchema, WorkspaceSettingsSchema } from './settings.schemas';
import { getSettings, patchSettings } from './settings.service';

const tags = ['workspace settings'];
const security = [{ apiKey: [] }];

/** Workspace settings (docs/api.md, "Authentication and scopes": admin scope), documented key by key in settings.schemas.ts. */
export function registerSettingsRoutes(app: App, deps: AppDeps): void {
  app.get(
    '/tenant/settings',
    {
      config: { auth: 'admin' },
      schema: {
        tags,
        security,
        summary: 'The workspace settings in effect, defaults filled in.',
        response: { 200: Envelope(WorkspaceSettingsSchema) },
      },
    },
    async (req) => ok(await getSettings(deps.db, deps.settings, workspaceOf(req))),
  );

  app.patch(
    '/tenant/settings',
    {
      config: { auth: 'admin', audit: { action: 'settings.update', target: 'workspace', id: 'workspace' } },
      schema: {
        tags,
        security,
        summary:
          'Change some settings (JSON merge patch: `null` restores a default). Answers the settings in ' +
          'effect, once every instance of the service applies them.',
        body: SettingsPatchSchema,
        response: { 200: Envelope(WorkspaceSettingsSchema) },
      },
    },
    async (req) => {
      const ws = workspaceOf(req);
      // The audit entry records the values that moved (the settings are read from the cache).
      const before = await getSettings(deps.db, deps.settings, ws);
      const after = await patchSettings(deps.db, deps.settings, ws, req.body);
      noteAudit(req, { before, after });
      return ok(after);
    },
  );
}
