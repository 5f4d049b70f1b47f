import type { Queryable } from '../../platform/db';

export interface WorkspaceRow {
  id: string;
  name: string;
  settings: Record<string, unknown>;
  created_at: Date;
}

export async function insertWorkspace(q: Queryable, id: string, name: string): Promise<WorkspaceRow> {
  const { rows } = await q.query<WorkspaceRow>(
    'INSERT INTO workspaces (id, name) VALUES ($1, $2) RETURNING id, name, settings, created_at',
    [id, name],
  );
  return rows[0]!;
}

export async function countWorkspaces(q: Queryable): Promise<number> {
  const { rows } = await q.query<{ n: number }>('SELECT count(*)::int AS n FROM workspaces');
  return rows[0]!.n;
}

export async function findWorkspace(q: Queryable, id: string): Promise<WorkspaceRow | null> {
  const { rows } = await q.query<WorkspaceRow>(
    'SELECT id, name, settings, created_at FROM workspaces WHERE id = $1',
    [id],
  );
  return rows[0] ?? null;
}

export async function updateSettings(
  q: Queryable,
  id: string,
  patch: Record<string, unknown>,
): Promise<void> {
  await q.query('UPDATE workspaces SET settings = settings || $2::jsonb WHERE id = $1', [
    id,
    JSON.stringify(patch),
  ]);
}

/** Serializes first-start bootstrap across processes that share a database. */
export async function lockBootstrap(q: Queryable): Promise<void> {
  await q.query('SELECT pg_advisory_xact_lock(7263002)');
}

export async function getSystemSetting(q: Queryable, key: string): Promise<string | null> {
  const { rows } = await q.query<{ value: string }>('SELECT value FROM system_settings WHERE key = $1', [
    key,
  ]);
  return rows[0]?.value ?? null;
}

/** Stores the value unless one exists; returns whichever value is stored afterwards. */
export async function ensureSystemSetting(q: Queryable, key: string, value: string): Promise<string> {
  await q.query('INSERT INTO system_settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING', [
    key,
    value,
  ]);
  return (await getSystemSetting(q, key))!;
}

/** The settings of these workspaces (absent ones are left out). */
export async function loadSettings(
  q: Queryable,
  ids: readonly string[],
): Promise<Array<{ id: string; settings: Record<string, unknown> }>> {
  if (ids.length === 0) return [];
  const { rows } = await q.query<{ id: string; settings: Record<string, unknown> }>(
    'SELECT id, settings FROM workspaces WHERE id = ANY($1::uuid[])',
    [[...new Set(ids)]],
  );
  return rows;
}
