import { randomBytes } from 'node:crypto';
import type { Db, Queryable } from '../../platform/db';
import { iso } from '../../platform/http/envelope';
import { newUuid } from '../../platform/ids';
import { type CreatedApiKey, createKey } from '../api-keys';
import { effectiveSettings } from './settings';
import type { WorkspaceSettings } from './settings.schemas';
import * as repo from './workspaces.repo';

export interface WorkspaceView {
  id: string;
  name: string;
  created_at: string;
}

export interface CreatedWorkspace {
  workspace: WorkspaceView;
  api_key: CreatedApiKey;
}

const present = (w: repo.WorkspaceRow): WorkspaceView => ({
  id: w.id,
  name: w.name,
  created_at: iso(w.created_at)!,
});

/** A workspace and its first admin key, in one transaction: never a workspace nobody can reach. */
export async function createWorkspace(db: Db, name: string, adminKey?: string): Promise<CreatedWorkspace> {
  return db.transaction(async (tx) => {
    const w = await repo.insertWorkspace(tx, newUuid(), name);
    const key = await createKey(tx, w.id, { name: 'admin', scopes: ['admin'] }, adminKey);
    return { workspace: present(w), api_key: key };
  });
}

/**
 * First start on an empty database: create workspace `default` with one admin key (the value of
 * CDP_INITIAL_ADMIN_KEY when set). Returns it so the caller can print the key once; null when the
 * database already had a workspace.
 */
export async function bootstrapDefaultWorkspace(
  db: Db,
  adminKey: string | null,
): Promise<CreatedWorkspace | null> {
  return db.transaction(async (tx) => {
    await repo.lockBootstrap(tx);
    if ((await repo.countWorkspaces(tx)) > 0) return null;
    const w = await repo.insertWorkspace(tx, newUuid(), 'default');
    const key = await createKey(
      tx,
      w.id,
      { name: 'initial admin', scopes: ['admin'] },
      adminKey ?? undefined,
    );
    return { workspace: present(w), api_key: key };
  });
}

/** The service-wide secret cursors are sealed with, created once and shared by every process. */
export async function loadCursorSecret(db: Db): Promise<string> {
  return db.transaction((tx) =>
    repo.ensureSystemSetting(tx, 'cursor_secret', randomBytes(32).toString('base64url')),
  );
}

/** The workspace, or null when there is none with this id (the id must be a UUID). */
export async function findWorkspace(db: Queryable, id: string): Promise<repo.WorkspaceRow | null> {
  return repo.findWorkspace(db, id);
}

/**
 * Every workspace with the settings in effect, a page at a time (`limit` workspaces, by id): what
 * a job that visits every workspace reads (the retention plan).
 */
export async function* allWorkspaceSettings(
  q: Queryable,
  limit = 500,
): AsyncIterable<Array<{ id: string; settings: WorkspaceSettings }>> {
  let after: string | null = null;
  for (;;) {
    const rows = await repo.pageSettings(q, after, limit);
    if (rows.length > 0) yield rows.map((r) => ({ id: r.id, settings: effectiveSettings(r.settings) }));
    if (rows.length < limit) return;
    after = rows.at(-1)!.id;
  }
}
