import type { Queryable } from '../../platform/db';

/**
 * The workspace's live profiles and those created since `since`, in one pass over its profiles
 * (the console's overview reads it at most once a minute per workspace: docs/console.md).
 */
export async function countProfiles(
  q: Queryable,
  workspaceId: string,
  since: Date,
): Promise<{ profiles: number; created_since: number }> {
  const { rows } = await q.query<{ profiles: number; created_since: number }>(
    `SELECT count(*)::int AS profiles, count(*) FILTER (WHERE created_at >= $2)::int AS created_since
       FROM profiles WHERE workspace_id = $1 AND merged_into IS NULL`,
    [workspaceId, since],
  );
  return rows[0] ?? { profiles: 0, created_since: 0 };
}
