import type { Queryable } from '../../platform/db';

/**
 * SQL of the rescoring list (intelligence_dirty_profiles: profiles whose orders changed since they
 * were scored) and of the refit counters (intelligence_state), both the intelligence module's own.
 */

/** Puts profiles on the rescoring list; answers the workspaces that got marks. */
export async function markDirty(
  q: Queryable,
  marks: ReadonlyArray<{ workspaceId: string; profileId: string }>,
): Promise<string[]> {
  if (marks.length === 0) return [];
  const { rows } = await q.query<{ workspace_id: string }>(
    `INSERT INTO intelligence_dirty_profiles (workspace_id, profile_id)
     SELECT DISTINCT workspace_id, profile_id
       FROM jsonb_to_recordset($1::jsonb) AS m(workspace_id uuid, profile_id uuid)
      ORDER BY workspace_id, profile_id
     ON CONFLICT DO NOTHING
     RETURNING workspace_id`,
    [JSON.stringify(marks.map((m) => ({ workspace_id: m.workspaceId, profile_id: m.profileId })))],
  );
  return [...new Set(rows.map((r) => r.workspace_id))];
}

export async function peekDirty(q: Queryable, workspaceId: string, limit: number): Promise<string[]> {
  const { rows } = await q.query<{ profile_id: string }>(
    'SELECT profile_id FROM intelligence_dirty_profiles WHERE workspace_id = $1 ORDER BY profile_id LIMIT $2',
    [workspaceId, limit],
  );
  return rows.map((r) => r.profile_id);
}

export async function clearDirty(
  q: Queryable,
  workspaceId: string,
  profileIds: readonly string[],
): Promise<void> {
  await q.query(
    'DELETE FROM intelligence_dirty_profiles WHERE workspace_id = $1 AND profile_id = ANY($2::uuid[])',
    [workspaceId, profileIds],
  );
}

/** The rescoring list is written and emptied all day: PGlite never vacuums it by itself. */
export async function vacuumDirty(q: Queryable): Promise<void> {
  await q.exec('VACUUM (ANALYZE) intelligence_dirty_profiles');
}

export async function listDirtyWorkspaces(q: Queryable): Promise<string[]> {
  const { rows } = await q.query<{ workspace_id: string }>(
    'SELECT DISTINCT workspace_id FROM intelligence_dirty_profiles',
  );
  return rows.map((r) => r.workspace_id);
}

/** Counts profiles rescored for new orders since the last fit; answers the new count and the fit's size. */
export async function countChanges(
  q: Queryable,
  workspaceId: string,
  n: number,
): Promise<{ changed_since_fit: number; customers_at_fit: number }> {
  const { rows } = await q.query<{ changed_since_fit: number; customers_at_fit: number }>(
    `INSERT INTO intelligence_state (workspace_id, changed_since_fit) VALUES ($1, $2)
     ON CONFLICT (workspace_id) DO UPDATE SET changed_since_fit = intelligence_state.changed_since_fit + $2
     RETURNING changed_since_fit, customers_at_fit`,
    [workspaceId, n],
  );
  return rows[0]!;
}

export async function resetChanges(q: Queryable, workspaceId: string, customers: number): Promise<void> {
  await q.query(
    `INSERT INTO intelligence_state (workspace_id, changed_since_fit, customers_at_fit) VALUES ($1, 0, $2)
     ON CONFLICT (workspace_id) DO UPDATE SET changed_since_fit = 0, customers_at_fit = $2`,
    [workspaceId, customers],
  );
}

/** Workspaces the schedule refits: every one that has ever had an order scored. */
export async function listScoredWorkspaces(q: Queryable): Promise<string[]> {
  const { rows } = await q.query<{ workspace_id: string }>('SELECT workspace_id FROM intelligence_state');
  return rows.map((r) => r.workspace_id);
}
