/**
 * The one scope table (contract §2). A route declares what it needs (`config.auth`); this table
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

/** `public`: no key at all (health, docs). `operator`: the operator token (POST /system/workspaces). */
export type RouteAuth = Requirement | 'public' | 'operator';

export function satisfies(scopes: readonly string[], need: Requirement): boolean {
  return ACCEPTED_SCOPES[need].some((s) => scopes.includes(s));
}
