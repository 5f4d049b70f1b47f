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

export interface StoredSettings {
  settings: Record<string, unknown>;
  /** Bumped by every change (migrations/0011). */
  version: number;
}

/** The stored settings of the workspace, locked until the transaction ends; null when absent. */
export async function lockSettings(q: Queryable, id: string): Promise<StoredSettings | null> {
  const { rows } = await q.query<StoredSettings>(
    'SELECT settings, settings_version AS version FROM workspaces WHERE id = $1 FOR UPDATE',
    [id],
  );
  return rows[0] ?? null;
}

/**
 * Replaces the stored settings; answers the version after the write. The trigger of
 * migrations/0011 bumps it and notifies every process only when the settings really differ.
 */
export async function writeSettings(
  q: Queryable,
  id: string,
  settings: Record<string, unknown>,
): Promise<number> {
  const { rows } = await q.query<{ version: number }>(
    'UPDATE workspaces SET settings = $2::jsonb WHERE id = $1 RETURNING settings_version AS version',
    [id, JSON.stringify(settings)],
  );
  return rows[0]!.version;
}

/** The workspace with this id, or else the oldest one with this name (CLI `--workspace`). */
export async function findWorkspaceByIdOrName(q: Queryable, ref: string): Promise<WorkspaceRow | null> {
  const { rows } = await q.query<WorkspaceRow>(
    `SELECT id, name, settings, created_at FROM workspaces
     WHERE id::text = lower($1) OR name = $1 ORDER BY (id::text = lower($1)) DESC, created_at LIMIT 1`,
    [ref],
  );
  return rows[0] ?? null;
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

/** A page of workspaces with their stored settings, by id after `afterId` (every workspace, in pages). */
export async function pageSettings(
  q: Queryable,
  afterId: string | null,
  limit: number,
): Promise<Array<{ id: string; settings: Record<string, unknown> }>> {
  const { rows } = await q.query<{ id: string; settings: Record<string, unknown> }>(
    'SELECT id, settings FROM workspaces WHERE ($1::uuid IS NULL OR id > $1::uuid) ORDER BY id LIMIT $2',
    [afterId, limit],
  );
  return rows;
}
