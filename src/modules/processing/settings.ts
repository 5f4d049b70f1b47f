import type { Queryable } from '../../platform/db';
import { junkSetFromSettings } from '../identity';
import { loadWorkspaceSettings } from '../workspaces';

/** Workspace settings the pipeline reads (junk identifier lists), cached briefly: they change rarely. */
export interface SettingsCache {
  junk(workspaceId: string): ReadonlySet<string>;
  load(q: Queryable, workspaceIds: readonly string[]): Promise<void>;
}

export function createSettingsCache(ttlMs = 30_000): SettingsCache {
  const cache = new Map<string, { junk: ReadonlySet<string>; expires: number }>();
  return {
    junk: (id) => cache.get(id)?.junk ?? junkSetFromSettings({}),
    async load(q, ids) {
      const now = Date.now();
      const missing = [...new Set(ids)].filter((id) => (cache.get(id)?.expires ?? 0) <= now);
      if (missing.length === 0) return;
      for (const row of await loadWorkspaceSettings(q, missing)) {
        cache.set(row.id, { junk: junkSetFromSettings(row.settings), expires: now + ttlMs });
      }
    },
  };
}
