import type { Queryable } from '../../platform/db';

/** The workspace `cdp demo` loads into by default: the bootstrapped `default` one. */
export async function findDefaultWorkspaceId(q: Queryable): Promise<string | null> {
  const { rows } = await q.query<{ id: string }>(
    `SELECT id FROM workspaces WHERE name = 'default' ORDER BY created_at, id LIMIT 1`,
  );
  return rows[0]?.id ?? null;
}

export async function workspaceExists(q: Queryable, workspaceId: string): Promise<boolean> {
  const { rows } = await q.query('SELECT 1 FROM workspaces WHERE id = $1', [workspaceId]);
  return rows.length > 0;
}
