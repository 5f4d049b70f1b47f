import { PageEnvelope } from '../../platform/http/envelope';
import { paged, pagedQuery, pageOf } from '../../platform/http/paging';
import { workspaceOf } from '../../platform/http/principal';
import type { App, AppDeps } from '../../platform/http/types';
import { AuditEntrySchema, AuditLogFilters } from './audit.schemas';
import { listAuditLog } from './audit.service';

/** The audit trail, read by admins (docs/api.md, "Audit log"). */
export function registerAuditRoutes(app: App, deps: AppDeps): void {
  app.get(
    '/tenant/audit-log',
    {
      config: { auth: 'admin' },
      schema: {
        tags: ['audit'],
        summary:
          'Who changed what: one entry per state-changing request (and per export), newest first; filter by action, principal and time.',
        querystring: pagedQuery(AuditLogFilters),
        response: { 200: PageEnvelope(AuditEntrySchema) },
      },
    },
    async (req) =>
      paged(
        await listAuditLog(
          deps.db,
          deps.cursors,
          workspaceOf(req),
          req.query,
          pageOf(req, deps.cursors, 'audit-log'),
        ),
      ),
  );
}
