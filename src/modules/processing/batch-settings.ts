import { effectiveSettings, type WorkspaceSettings } from '../workspaces';
import type { BatchWork } from './pipeline';

/** The workspace settings a batch's steps read: loaded once per batch, through the one accessor. */

const DEFAULTS: WorkspaceSettings = effectiveSettings({});

/** Loads the settings of these workspaces into the batch (cached by the accessor). */
export async function loadSettings(w: BatchWork, workspaceIds: readonly string[]): Promise<void> {
  const missing = workspaceIds.filter((id) => !w.settings.has(id));
  if (missing.length === 0) return;
  for (const [id, s] of await w.ctx.settings.readMany(w.tx, missing)) w.settings.set(id, s);
}

/** A workspace's settings as loaded for this batch; the defaults for one that is gone. */
export const settingsOf = (w: BatchWork, workspaceId: string): WorkspaceSettings =>
  w.settings.get(workspaceId) ?? DEFAULTS;
