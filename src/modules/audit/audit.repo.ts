import type { Queryable } from '../../platform/db';

export interface AuditRow {
  id: string;
  workspace_id: string;
  created_at: Date;
  action: string;
  principal_type: 'api_key' | 'session' | 'operator';
  key_id: string | null;
  key_name: string | null;
  session_id: string | null;
  target_type: string;
  target_id: string | null;
  diff: unknown;
  request_id: string;
  client_ip: string | null;
  user_agent: string | null;
  status: number;
}

const COLUMNS = `id, workspace_id, created_at, action, principal_type, key_id, key_name, session_id,
  target_type, target_id, diff, request_id, client_ip, user_agent, status`;

export type NewAuditRow = Omit<AuditRow, 'diff'> & { diff: string | null };

/** One statement, committed on return (no transaction around it): the entry is durable then. */
export async function insertEntry(q: Queryable, r: NewAuditRow): Promise<void> {
  await q.query(
    `INSERT INTO audit_log (${COLUMNS})
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::jsonb, $12, $13, $14, $15)`,
    [
      r.id,
      r.workspace_id,
      r.created_at,
      r.action,
      r.principal_type,
      r.key_id,
      r.key_name,
      r.session_id,
      r.target_type,
      r.target_id,
      r.diff,
      r.request_id,
      r.client_ip,
      r.user_agent,
      r.status,
    ],
  );
}

export interface AuditFilter {
  action?: string | undefined;
  keyId?: string | undefined;
  sessionId?: string | undefined;
  since?: Date | undefined;
  until?: Date | undefined;
}

/**
 * A page of the workspace's entries, newest first, after the keyset `(created_at, id)` of the last
 * one seen. Each filter has an index that starts with the workspace and ends with the page order.
 */
export async function listEntries(
  q: Queryable,
  workspaceId: string,
  filter: AuditFilter,
  after: { at: Date; id: string } | null,
  limit: number,
): Promise<AuditRow[]> {
  const params: unknown[] = [workspaceId];
  const where = ['workspace_id = $1'];
  const add = (sql: string, value: unknown) => {
    params.push(value);
    where.push(sql.replace('?', `$${params.length}`));
  };
  if (filter.action !== undefined) add('action = ?', filter.action);
  if (filter.keyId !== undefined) add('key_id = ?', filter.keyId);
  if (filter.sessionId !== undefined) add('session_id = ?', filter.sessionId);
  if (filter.since !== undefined) add('created_at >= ?', filter.since);
  if (filter.until !== undefined) add('created_at < ?', filter.until);
  if (after) {
    params.push(after.at, after.id);
    where.push(`(created_at, id) < ($${params.length - 1}, $${params.length})`);
  }
  params.push(limit + 1);
  const { rows } = await q.query<AuditRow>(
    `SELECT ${COLUMNS} FROM audit_log WHERE ${where.join(' AND ')}
      ORDER BY created_at DESC, id DESC LIMIT $${params.length}`,
    params,
  );
  return rows;
}

/** The diff the erasure leaves on an entry about an erased profile. */
export const ERASED_DIFF = '{"erased":true}';

/** Scrubs the diffs of the entries about these profiles; answers how many changed. */
export async function scrubProfileDiffs(
  q: Queryable,
  workspaceId: string,
  profileIds: readonly string[],
): Promise<number> {
  if (profileIds.length === 0) return 0;
  const { rowCount } = await q.query(
    `UPDATE audit_log SET diff = $3::jsonb
      WHERE workspace_id = $1 AND target_type = 'profile' AND target_id = ANY($2::text[])
        AND diff IS DISTINCT FROM $3::jsonb`,
    [workspaceId, profileIds, ERASED_DIFF],
  );
  return rowCount;
}

/** A page of the entries about these profiles, oldest first, after `(created_at, id)`. */
export async function entriesAbout(
  q: Queryable,
  workspaceId: string,
  profileIds: readonly string[],
  after: { at: Date; id: string } | null,
  limit: number,
): Promise<AuditRow[]> {
  const params: unknown[] = [workspaceId, profileIds, limit];
  let keyset = '';
  if (after) {
    params.push(after.at, after.id);
    keyset = 'AND (created_at, id) > ($4, $5)';
  }
  const { rows } = await q.query<AuditRow>(
    `SELECT ${COLUMNS} FROM audit_log
      WHERE workspace_id = $1 AND target_type = 'profile' AND target_id = ANY($2::text[]) ${keyset}
      ORDER BY created_at, id LIMIT $3`,
    params,
  );
  return rows;
}

/** Removes at most `limit` of the workspace's entries written before `before`, oldest first. */
export async function deleteEntriesBefore(
  q: Queryable,
  workspaceId: string,
  before: Date,
  limit: number,
): Promise<number> {
  const { rowCount } = await q.query(
    `DELETE FROM audit_log WHERE id IN (
       SELECT id FROM audit_log WHERE workspace_id = $1 AND created_at < $2
        ORDER BY created_at, id LIMIT $3)`,
    [workspaceId, before, limit],
  );
  return rowCount;
}
