import type { Db } from '../../platform/db';
import { notFound } from '../../platform/errors';
import { applySettingsPatch, effectiveSettings } from './settings';
import type { SettingsPatch, WorkspaceSettings } from './settings.schemas';
import type { SettingsStore } from './settings.store';
import * as repo from './workspaces.repo';

/** GET /tenant/settings, `cdp settings get`: the settings in effect, through the one accessor. */
export function getSettings(db: Db, store: SettingsStore, workspaceId: string): Promise<WorkspaceSettings> {
  return store.read(db, workspaceId);
}

/**
 * PATCH /tenant/settings, `cdp settings set`: merges a validated patch into the stored settings
 * under the row lock (two concurrent patches of different keys both survive), then, after COMMIT,
 * waits until every live process has dropped its copy: the answer is what every process applies
 * from then on. `store` is null for the offline CLI, which has no cache and is no peer; running
 * services still hear the change from the trigger's notification.
 */
export async function patchSettings(
  db: Db,
  store: SettingsStore | null,
  workspaceId: string,
  patch: SettingsPatch,
): Promise<WorkspaceSettings> {
  const { next, token } = await db.transaction(async (tx) => {
    const current = await repo.lockSettings(tx, workspaceId);
    if (!current) throw notFound('workspace');
    const next = applySettingsPatch(current.settings, patch);
    const version = await repo.writeSettings(tx, workspaceId, next);
    // Unchanged settings are not notified (the trigger compares): nobody would confirm.
    return { next, token: version !== current.version ? `${workspaceId}:${version}` : null };
  });
  if (token && store) await store.changed(token);
  return effectiveSettings(next);
}
