import { Value } from 'typebox/value';
import { ConfigError } from '../../config';
import type { Db } from '../../platform/db';
import { effectiveSettings } from './settings';
import { type SettingsPatch, SettingsPatchSchema, type WorkspaceSettings } from './settings.schemas';
import { patchSettings } from './settings.service';
import type { SettingsStore } from './settings.store';
import * as repo from './workspaces.repo';

/**
 * `cdp settings get|set`: the workspace settings, on the database (no key). Input goes through the
 * same schema as PATCH /tenant/settings. On PostgreSQL a running service hears a change at once (the
 * trigger's notification); on PGlite the command runs inside the running service (src/commands.ts),
 * which passes its settings store so the change is in effect when the command answers.
 */

export interface SettingsCommandResult {
  workspace: { id: string; name: string };
  settings: WorkspaceSettings;
}

/**
 * `rate_limits.requests_per_minute=500 junk_identifiers='["demo"]' merge_cap=null` → a patch.
 * Values are JSON; one that is not JSON is taken as a string (`name=x` needs no quotes).
 */
export function parseAssignments(args: readonly string[]): SettingsPatch {
  if (args.length === 0) throw new ConfigError('usage: cdp settings set KEY=VALUE … (see cdp --help)');
  const patch: Record<string, unknown> = {};
  for (const arg of args) {
    const eq = arg.indexOf('=');
    if (eq <= 0)
      throw new ConfigError(`"${arg}" is not KEY=VALUE (e.g. rate_limits.requests_per_minute=500)`);
    const path = arg.slice(0, eq).split('.');
    const raw = arg.slice(eq + 1);
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch {
      value = raw;
    }
    let at = patch;
    for (const part of path.slice(0, -1)) {
      const next = at[part];
      if (next !== undefined && (typeof next !== 'object' || next === null || Array.isArray(next))) {
        throw new ConfigError(`"${arg}" conflicts with an earlier value of ${part}`);
      }
      if (next === undefined) at[part] = {};
      at = at[part] as Record<string, unknown>;
    }
    at[path.at(-1)!] = value;
  }
  const errors = [...Value.Errors(SettingsPatchSchema, patch)];
  if (errors.length > 0) {
    // One line, every problem, named by the dotted key the caller typed.
    const seen = new Set<string>();
    const problems = errors
      // TypeBox reports an unknown key twice: as `additionalProperties` and as a `false` schema.
      .filter((e) => e.keyword !== 'boolean')
      .map((e) => {
        const extra = (e.params as { additionalProperties?: string[] } | undefined)?.additionalProperties;
        const key = e.instancePath.slice(1).replaceAll('/', '.');
        if (e.keyword === 'additionalProperties' && extra) {
          return `${[key, ...extra].filter(Boolean).join('.')} is not a setting`;
        }
        return `${key || 'settings'} ${e.message}`;
      })
      .filter((p) => !seen.has(p) && seen.add(p));
    throw new ConfigError(`invalid setting: ${problems.join('; ')}`);
  }
  return patch as SettingsPatch;
}

async function findWorkspace(db: Db, ref: string | undefined) {
  const w = await repo.findWorkspaceByIdOrName(db, ref ?? 'default');
  if (!w) {
    throw new ConfigError(
      ref === undefined ? 'no workspace named "default"; pass --workspace ID|NAME' : `no workspace ${ref}`,
    );
  }
  return w;
}

export async function runSettingsCommand(
  db: Db,
  sub: string | undefined,
  args: readonly string[],
  workspaceRef: string | undefined,
  store: SettingsStore | null = null,
): Promise<SettingsCommandResult> {
  if (sub === 'get') {
    if (args.length > 0) throw new ConfigError('usage: cdp settings get [--workspace ID|NAME]');
    const w = await findWorkspace(db, workspaceRef);
    return { workspace: { id: w.id, name: w.name }, settings: effectiveSettings(w.settings) };
  }
  if (sub === 'set') {
    const patch = parseAssignments(args);
    const w = await findWorkspace(db, workspaceRef);
    return { workspace: { id: w.id, name: w.name }, settings: await patchSettings(db, store, w.id, patch) };
  }
  throw new ConfigError('usage: cdp settings get|set [KEY=VALUE …] [--workspace ID|NAME]');
}
