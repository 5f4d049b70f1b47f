import { notify, type Queryable } from '../../platform/db';

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
/** A key whose `allowed_domains` now count or no longer count (created with some, or revoked): its id. */
export const ORIGINS_CHANNEL = 'cdp_key_origins';
/** Service processes announce themselves here (`{ns, id, kind}`), so a revoker knows whom to wait for. */
export const PRESENCE_CHANNEL = 'cdp_instances';
/** Each process confirms here (`<hash> <instance id>`) that it has dropped a revoked key. */
export const EVICTED_CHANNEL = 'cdp_key_evicted';

/** Sends one notification to every process listening on the channel (delivered at COMMIT). */
export { notify };

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
  // Every process's preflight index learns the new origins (delivered at COMMIT).
  if (k.allowedDomains.length > 0) await notify(q, ORIGINS_CHANNEL, k.id);
  return rows[0]!;
}

/**
 * Serialises key creation per workspace in the calling transaction, so that two concurrent
 * creations cannot both pass the count limit.
 */
export async function lockWorkspaceKeys(q: Queryable, workspaceId: string): Promise<void> {
  await q.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`cdp.api_keys:${workspaceId}`]);
}

export async function countActiveKeys(q: Queryable, workspaceId: string): Promise<number> {
  const { rows } = await q.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM api_keys WHERE workspace_id = $1 AND revoked_at IS NULL',
    [workspaceId],
  );
  return rows[0]!.n;
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
export async function revokeKey(
  q: Queryable,
  workspaceId: string,
  id: string,
): Promise<{ keyHash: string; browser: boolean } | null> {
  const { rows } = await q.query<{ key_hash: string; browser: boolean }>(
    `UPDATE api_keys SET revoked_at = now()
     WHERE workspace_id = $1 AND id = $2 AND revoked_at IS NULL
     RETURNING key_hash, cardinality(allowed_domains) > 0 AS browser`,
    [workspaceId, id],
  );
  const row = rows[0];
  if (!row) return null;
  await notify(q, REVOCATION_CHANNEL, row.key_hash);
  if (row.browser) await notify(q, ORIGINS_CHANNEL, id);
  return { keyHash: row.key_hash, browser: row.browser };
}

/** The key with this hash, revoked or not (what a refused console sign-in is attributed to). */
export async function findAnyKeyByHash(
  q: Queryable,
  keyHash: string,
): Promise<{ id: string; workspace_id: string; name: string } | null> {
  const { rows } = await q.query<{ id: string; workspace_id: string; name: string }>(
    'SELECT id, workspace_id, name FROM api_keys WHERE key_hash = $1',
    [keyHash],
  );
  return rows[0] ?? null;
}

export async function findActiveKeyByHash(q: Queryable, keyHash: string): Promise<ApiKeyRow | null> {
  const { rows } = await q.query<ApiKeyRow>(
    `SELECT ${COLUMNS} FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL`,
    [keyHash],
  );
  return rows[0] ?? null;
}

export interface BrowserKeyRow {
  seq: number;
  id: string;
  allowed_domains: string[];
}

/** A page of the active keys that have domains, in seq order: what a preflight may be answered for. */
export async function listBrowserKeys(
  q: Queryable,
  afterSeq: number,
  limit: number,
): Promise<BrowserKeyRow[]> {
  const { rows } = await q.query<BrowserKeyRow>(
    `SELECT seq, id, allowed_domains FROM api_keys
     WHERE seq > $1 AND revoked_at IS NULL AND cardinality(allowed_domains) > 0
     ORDER BY seq LIMIT $2`,
    [afterSeq, limit],
  );
  return rows;
}

/** Those of these keys that are active and have domains. */
export async function findBrowserKeys(q: Queryable, ids: readonly string[]): Promise<BrowserKeyRow[]> {
  const { rows } = await q.query<BrowserKeyRow>(
    `SELECT seq, id, allowed_domains FROM api_keys
     WHERE id = ANY($1::text[]) AND revoked_at IS NULL AND cardinality(allowed_domains) > 0`,
    [ids],
  );
  return rows;
}
