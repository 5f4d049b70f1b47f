/**
 * The workspaces module's public API. Tables: workspaces, system_settings.
 */

export { effectiveSettings } from './settings';
export { registerSettingsRoutes } from './settings.routes';
export {
  DEFAULT_SETTINGS,
  RETENTION_KEYS,
  type RetentionDays,
  type RetentionKey,
  type SettingsPatch,
  SettingsPatchSchema,
  type WorkspaceSettings,
  WorkspaceSettingsSchema,
} from './settings.schemas';
export { getSettings, patchSettings } from './settings.service';
export { createSettingsStore, type SettingsStore, type SettingsStoreOptions } from './settings.store';
export type { WorkspaceRow } from './workspaces.repo';
export {
  allWorkspaceSettings,
  bootstrapDefaultWorkspace,
  type CreatedWorkspace,
  createWorkspace,
  findWorkspace,
  loadCursorSecret,
  type WorkspaceView,
} from './workspaces.service';
