// The audit trail (GET /tenant/audit-log, docs/api.md "Audit log").

export type AuditPrincipal =
  | { type: 'api_key'; key_id: string | null; key_name: string | null }
  | { type: 'session'; session_id: string | null; key_id: string | null; key_name: string | null }
  | { type: 'operator' };

export interface AuditEntry {
  id: string;
  time: string;
  action: string;
  principal: AuditPrincipal;
  target: { type: string; id: string | null };
  diff: unknown;
  request_id: string;
  client_ip: string | null;
  user_agent: string | null;
  status: number;
}

/** The actions the service writes today (the filter suggests them; any dotted name may be typed). */
export const AUDIT_ACTIONS = [
  'apikey.create',
  'apikey.revoke',
  'dead_letter.retry',
  'identity.merge',
  'model.fit',
  'product.delete',
  'product.save',
  'product.update',
  'profile.erase',
  'profile.upsert',
  'segment.create',
  'segment.delete',
  'segment.update',
  'session.create',
  'session.delete',
  'settings.update',
  'webhook.create',
  'webhook.delete',
  'webhook.redeliver',
  'webhook.rotate_secret',
  'webhook.test',
  'webhook.update',
  'workspace.create',
] as const;
