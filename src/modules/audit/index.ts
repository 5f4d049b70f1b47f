/**
 * The audit trail (docs/api.md, "Audit log"). Tables: audit_log. The store behind the HTTP hooks of
 * platform/http/audit.ts (wired by the composition root), the admins' read route, and the module's
 * personal data (the registry, src/workflows/personal-data.ts, lists `auditPersonalData`).
 */

export { registerAuditRoutes } from './audit.routes';
export { type AuditEntryView, createAuditSink } from './audit.service';
export { auditPersonalData } from './personal-data';
