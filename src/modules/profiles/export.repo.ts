import type { Db, Queryable } from '../../platform/db';
import {
  type ExportField,
  type ExportFormat,
  type ExportKey,
  type ExportPage,
  type ExportWindow,
  exportLineSql,
  inIndexOrder,
  type KeysetPageRow,
  keysetPage,
  keysetPageSql,
  keysetWindowParams,
  keysetWindowSql,
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
export async function exportProfilesPage(
  db: Db,
  workspaceId: string,
  after: ExportKey | null,
  window: ExportWindow,
  format: ExportFormat,
  limit: number,
): Promise<ExportPage<ExportKey>> {
  const { rows } = await inIndexOrder(db, (q) =>
    q.query<KeysetPageRow>(
      keysetPageSql(
        `SELECT ${exportLineSql(PROFILE_EXPORT_FIELDS, format)} AS line, p.created_at::text AS at, p.seq
           FROM profiles p
          WHERE p.workspace_id = $1 AND p.merged_into IS NULL AND ${keysetWindowSql('p.created_at', 'p.seq', 2)}
          ORDER BY p.created_at, p.seq LIMIT $6`,
      ),
      [workspaceId, ...keysetWindowParams(after, window), limit],
    ),
  );
  return keysetPage(rows[0]!);
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

/**
 * The export lines of these profiles, in the order given (a page of a segment's members), as one
 * text; one primary-key probe each; an id no longer live (merged or erased since it was listed) is
 * left out.
 */
export async function exportProfileLines(
  q: Queryable,
  workspaceId: string,
  ids: readonly string[],
  format: ExportFormat,
): Promise<string> {
  if (ids.length === 0) return '';
  const { rows } = await q.query<{ text: string | null }>(
    `SELECT string_agg(${exportLineSql(PROFILE_EXPORT_FIELDS, format)}, '' ORDER BY a.n) AS text
       FROM unnest($2::uuid[]) WITH ORDINALITY AS a(id, n)
       CROSS JOIN LATERAL (SELECT * FROM profiles x
                            WHERE x.workspace_id = $1 AND x.id = a.id AND x.merged_into IS NULL OFFSET 0) p`,
    [workspaceId, ids],
  );
  return rows[0]?.text ?? '';
}
