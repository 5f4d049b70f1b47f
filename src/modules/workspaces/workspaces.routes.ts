import { Type } from 'typebox';
import { noteAudit } from '../../platform/http/audit';
import { Envelope, ok } from '../../platform/http/envelope';
import type { App, AppDeps } from '../../platform/http/types';
import { ApiKeyCreatedSchema } from '../api-keys/api-keys.schemas';
import { CreateWorkspaceBody, WorkspaceSchema } from './workspaces.schemas';
import { createWorkspace } from './workspaces.service';

export function registerWorkspaceRoutes(app: App, deps: AppDeps): void {
  app.post(
    '/system/workspaces',
    {
      config: {
        auth: 'operator',
        rateTier: 'none',
        audit: { action: 'workspace.create', target: 'workspace', id: 'workspace' },
      },
      schema: {
        tags: ['operator'],
        summary: 'Create a workspace and its first admin key (operator token; 404 when none is configured).',
        security: [{ operatorToken: [] }],
        body: CreateWorkspaceBody,
        response: {
          200: Envelope(Type.Object({ workspace: WorkspaceSchema, api_key: ApiKeyCreatedSchema })),
        },
      },
    },
    async (req) => {
      const created = await createWorkspace(deps.db, req.body.name);
      // The operator has no workspace: the entry goes to the one it created.
      noteAudit(req, { workspaceId: created.workspace.id });
      return ok(created);
    },
  );
}
