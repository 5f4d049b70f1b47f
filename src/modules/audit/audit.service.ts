import { type CursorCodec, type Page, type PageRequest, toPage } from '../../platform/cursor';
import type { Db } from '../../platform/db';
import { AppError } from '../../platform/errors';
import type { AuditRecord, AuditSink } from '../../platform/http/audit';
import { iso } from '../../platform/http/envelope';
import { newSortableId } from '../../platform/ids';
import * as repo from './audit.repo';
import { storedDiff } from './redact';

/** An entry as the API shows it (docs/api.md, "Audit log"). */
export interface AuditEntryView {
  id: string;
  time: string;
  action: string;
  principal:
    | { type: 'api_key'; key_id: string | null; key_name: string | null }
    | { type: 'session'; session_id: string | null; key_id: string | null; key_name: string | null }
    | { type: 'operator' };
  target: { type: string; id: string | null };
  diff: unknown;
  request_id: string;
  client_ip: string | null;
  user_agent: string | null;
  status: number;
}

/**
 * The store behind the HTTP hooks (platform/http/audit.ts): one INSERT per audited request, outside
 * any transaction of the change, committed before the answer leaves. A refused request (4xx, 5xx)
 * keeps no body: what it carried was not stored anywhere else either, and it may name a person who
 * was erased (a write refused because their identifiers are suppressed).
 */
export function createAuditSink(db: Db): AuditSink {
  return {
    async write(r: AuditRecord) {
      const a = r.actor;
      await repo.insertEntry(db, {
        id: newSortableId('aud', r.at.getTime()),
        workspace_id: r.workspaceId,
        created_at: r.at,
        action: r.action,
        principal_type: a.type,
        key_id: a.type === 'operator' ? null : a.keyId,
        key_name: a.type === 'operator' ? null : a.keyName,
        session_id: a.type === 'session' ? a.sessionId : null,
        target_type: r.target.type,
        target_id: r.target.id,
        diff: r.status >= 400 ? null : JSON.stringify(storedDiff(r.diff)),
        request_id: r.requestId,
        client_ip: r.clientIp,
        user_agent: r.userAgent,
        status: r.status,
      });
    },
  };
}

export function presentEntry(r: repo.AuditRow): AuditEntryView {
  const principal: AuditEntryView['principal'] =
    r.principal_type === 'operator'
      ? { type: 'operator' }
      : r.principal_type === 'session'
        ? { type: 'session', session_id: r.session_id, key_id: r.key_id, key_name: r.key_name }
        : { type: 'api_key', key_id: r.key_id, key_name: r.key_name };
  return {
    id: r.id,
    time: iso(r.created_at)!,
    action: r.action,
    principal,
    target: { type: r.target_type, id: r.target_id },
    diff: r.diff ?? null,
    request_id: r.request_id,
    client_ip: r.client_ip,
    user_agent: r.user_agent,
    status: r.status,
  };
}

export interface AuditQuery {
  action?: string | undefined;
  /** A key id (everything done with the key, through its console sessions too) or a session id. */
  principal?: string | undefined;
  since?: string | undefined;
  until?: string | undefined;
}

/** The workspace's entries, newest first, one page (GET /tenant/audit-log). */
export async function listAuditLog(
  db: Db,
  cursors: CursorCodec,
  workspaceId: string,
  query: AuditQuery,
  page: PageRequest,
): Promise<Page<AuditEntryView>> {
  const since = query.since === undefined ? undefined : new Date(query.since);
  const until = query.until === undefined ? undefined : new Date(query.until);
  if (since && until && since >= until) {
    throw new AppError('VALIDATION_ERROR', '`since` must be before `until`', {
      details: [{ path: '/since', message: 'must be before until' }],
    });
  }
  const p = query.principal;
  const isSession = p?.startsWith('ses_') === true;
  const after = keysetOf(page.after);
  const rows = await repo.listEntries(
    db,
    workspaceId,
    {
      action: query.action,
      keyId: p !== undefined && !isSession ? p : undefined,
      sessionId: isSession ? p : undefined,
      since,
      until,
    },
    after,
    page.limit,
  );
  return toPage(cursors, page, rows, (r) => [iso(r.created_at), r.id], presentEntry);
}

/** The decoded keyset of a cursor (checked by the codec: only a cursor this service sealed gets here). */
function keysetOf(after: unknown[] | null): { at: Date; id: string } | null {
  if (!after) return null;
  const [at, id] = after;
  if (typeof at !== 'string' || typeof id !== 'string') {
    throw new AppError('INVALID_CURSOR', 'cursor is not valid for this collection');
  }
  return { at: new Date(at), id };
}
