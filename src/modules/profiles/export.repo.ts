import type { Queryable } from '../../platform/db';
import {
  type ExportField,
  type ExportFormat,
  type ExportKey,
  type ExportPage,
  type ExportWindow,
  exportLineSql,
  keysetWindowSql,
  pageParams,
  readPage,
} from '../../platform/db/export-lines';

/**
 * Live profiles as a workspace export reads them (GET /tenant/exports/profiles, and the members of
 * GET /tenant/exports/segments/{id}/members): each record is what GET /tenant/profiles/{id} shows
 * (presentProfile), identifiers included, read from the identity graph in the same statement as
 * every profile read does (profile-reads.repo.ts). The whole export walks (created_at, seq) through
 * profiles_export_idx (migrations/0040), a page per statement.
 */
export const PROFILE_EXPORT_FIELDS: readonly ExportField[] = [
  { name: 'id', sql: 'p.id', kind: 'text' },
  { name: 'email', sql: 'p.email', kind: 'text' },
  { name: 'first_name', sql: 'p.first_name', kind: 'text' },
  { name: 'last_name', sql: 'p.last_name', kind: 'text' },
  { name: 'total_spend', sql: 'p.total_spend', kind: 'number' },
  { name: 'rfm_segment', sql: 'p.rfm_segment', kind: 'text' },
  { name: 'churn_risk_score', sql: 'p.churn_risk_score', kind: 'number' },
  { name: 'predicted_clv', sql: 'p.predicted_clv', kind: 'number' },
  { name: 'created_at', sql: 'p.created_at', kind: 'time' },
  { name: 'updated_at', sql: 'p.updated_at', kind: 'time' },
  { name: 'attributes', sql: 'p.attributes', kind: 'json' },
  {
    name: 'identities',
    // As profile-reads.repo.ts orders them.
    sql: `COALESCE((SELECT jsonb_agg(jsonb_build_object('type', n.type, 'value', n.value)
            ORDER BY n.first_seen, n.type, n.value) FROM identity_nodes n WHERE n.profile_id = p.id), '[]'::jsonb)`,
    kind: 'json',
  },
];

/** One page of the workspace's live profiles after `after`, created within the window. */
export function exportProfilesPage(
  q: Queryable,
  workspaceId: string,
  after: ExportKey | null,
  window: ExportWindow,
  format: ExportFormat,
  limit: number,
): Promise<ExportPage<ExportKey>> {
  const p = pageParams();
  return readPage(
    q,
    `SELECT ${exportLineSql(PROFILE_EXPORT_FIELDS, format)} AS line, p.created_at::text AS at, p.seq
       FROM profiles p
      WHERE p.workspace_id = ${p.ref(workspaceId, 'uuid')} AND p.merged_into IS NULL
        AND ${keysetWindowSql('p.created_at', 'p.seq', after, window, p)}
      ORDER BY p.created_at, p.seq LIMIT ${p.ref(limit, 'integer')}`,
    p,
  );
}

/**
 * Where profile `id` of the workspace stands in that order, or null when there is no such profile.
 * A profile merged away since keeps its place (its row stays), so an export resumes after it.
 */
export async function findProfileKey(
  q: Queryable,
  workspaceId: string,
  id: string,
): Promise<ExportKey | null> {
  const { rows } = await q.query<ExportKey>(
    'SELECT created_at::text AS at, seq FROM profiles WHERE workspace_id = $1 AND id = $2',
    [workspaceId, id],
  );
  return rows[0] ?? null;
}
