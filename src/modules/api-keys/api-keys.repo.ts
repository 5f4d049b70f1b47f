import type { Queryable } from '../../platform/db';

export interface ApiKeyRow {
  seq: number;
  id: string;
  workspace_id: string;
  name: string;
  prefix: string;
  scopes: string[];
  allowed_domains: string[];
  created_at: Date;
}

const COLUMNS = 'seq, id, workspace_id, name, prefix, scopes, allowed_domains, created_at';

export const REVOCATION_CHANNEL = 'cdp_key_revoked';
/** Service processes announce themselves here (`{ns, id, kind}`), so a revoker knows whom to wait for. */
export const PRESENCE_CHANNEL = 'cdp_instances';
/** Each process confirms here (`<hash> <instance id>`) that it has dropped a revoked key. */
export const EVICTED_CHANNEL = 'cdp_key_evicted';

/** Sends one notification to every process listening on the channel (delivered at COMMIT). */
export async function notify(q: Queryable, channel: string, payload: string): Promise<void> {
  await q.query('SELECT pg_notify($1, $2)', [channel, payload]);
}

export async function insertKey(
  q: Queryable,
  k: {
    id: string;
    workspaceId: string;
    name: string;
    keyHash: string;
    prefix: string;
    scopes: string[];
    allowedDomains: string[];
  },
): Promise<ApiKeyRow> {
  const { rows } = await q.query<ApiKeyRow>(
    `INSERT INTO api_keys (id, workspace_id, name, key_hash, prefix, scopes, allowed_domains)
     VALUES ($1, $2, $3, $4, $5, $6::text[], $7::text[]) RETURNING ${COLUMNS}`,
    [k.id, k.workspaceId, k.name, k.keyHash, k.prefix, k.scopes, k.allowedDomains],
  );
  return rows[0]!;
}

export async function listActiveKeys(
  q: Queryable,
  workspaceId: string,
  afterSeq: number | null,
  limit: number,
): Promise<ApiKeyRow[]> {
  const { rows } = await q.query<ApiKeyRow>(
    `SELECT ${COLUMNS} FROM api_keys
     WHERE workspace_id = $1 AND revoked_at IS NULL AND ($2::bigint IS NULL OR seq > $2::bigint)
     ORDER BY seq LIMIT $3`,
    [workspaceId, afterSeq, limit],
  );
  return rows;
}

/**
 * Marks the key revoked and, in the same transaction, notifies every process sharing the database
 * (delivered at COMMIT), so their caches drop it before anyone can be told the delete succeeded.
 */
export async function revokeKey(q: Queryable, workspaceId: string, id: string): Promise<string | null> {
  const { rows } = await q.query<{ key_hash: string }>(
    `UPDATE api_keys SET revoked_at = now()
     WHERE workspace_id = $1 AND id = $2 AND revoked_at IS NULL RETURNING key_hash`,
    [workspaceId, id],
  );
  const hash = rows[0]?.key_hash ?? null;
  if (hash) await q.query('SELECT pg_notify($1, $2)', [REVOCATION_CHANNEL, hash]);
  return hash;
}

export async function findActiveKeyByHash(q: Queryable, keyHash: string): Promise<ApiKeyRow | null> {
  const { rows } = await q.query<ApiKeyRow>(
    `SELECT ${COLUMNS} FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL`,
    [keyHash],
  );
  return rows[0] ?? null;
}

/** Every domain pattern of every active key: what a CORS preflight may be answered for. */
export async function listAllowedDomainPatterns(q: Queryable): Promise<string[]> {
  const { rows } = await q.query<{ d: string }>(
    `SELECT DISTINCT unnest(allowed_domains) AS d FROM api_keys WHERE revoked_at IS NULL`,
  );
  return rows.map((r) => r.d);
}
