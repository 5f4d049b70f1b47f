/**
 * The workspaces module's public API. Tables: workspaces, system_settings.
 */

export type { WorkspaceRow } from './workspaces.repo';
export {
  bootstrapDefaultWorkspace,
  type CreatedWorkspace,
  createWorkspace,
  findWorkspace,
  loadCursorSecret,
  loadWorkspaceSettings,
  updateWorkspaceSettings,
  type WorkspaceView,
} from './workspaces.service';
