/**
 * The one scope table (docs/api.md "Authentication and scopes"). A route declares what it needs (`config.auth`); this table
 * says which key scopes satisfy it. Nothing else in the code compares scopes.
 */
export const SCOPES = ['admin', 'editor', 'viewer', 'ingest'] as const;
export type Scope = (typeof SCOPES)[number];

export type Requirement =
  /** POST /api/ingest, POST /tenant/ingest/batch */
  | 'ingest'
  /** every GET on /tenant/*, /identity/*, /intelligence/* except keys and webhooks */
  | 'read'
  /** profile, segment, product writes; merges; deletions */
  | 'write'
  /** API keys, webhooks, model fits, settings, exports */
  | 'admin';

export const ACCEPTED_SCOPES: Record<Requirement, readonly Scope[]> = {
  ingest: ['ingest', 'admin'],
  read: ['viewer', 'editor', 'admin'],
  write: ['editor', 'admin'],
  admin: ['admin'],
};

/**
 * `public`: no key at all (health, docs). `operator`: the operator token (POST /system/workspaces).
 * `local`: the `cdp` CLI on this machine, with the token this process wrote into its lock on the
 * embedded database's directory (POST /system/commands); no such route exists without that lock.
 */
export type RouteAuth = Requirement | 'public' | 'operator' | 'local';

export function satisfies(scopes: readonly string[], need: Requirement): boolean {
  return ACCEPTED_SCOPES[need].some((s) => scopes.includes(s));
}
