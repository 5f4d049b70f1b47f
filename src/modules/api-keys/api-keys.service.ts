import { createHash, randomBytes } from 'node:crypto';
import type { CursorCodec, Page, PageRequest } from '../../platform/cursor';
import { toPage } from '../../platform/cursor';
import type { Db, Queryable } from '../../platform/db';
import { AppError, notFound } from '../../platform/errors';
import type { OriginIndex, OriginSource, OwnerPatterns } from '../../platform/http/cors';
import { iso } from '../../platform/http/envelope';
import { newSortableId } from '../../platform/ids';
import * as repo from './api-keys.repo';
import { KEYS_PER_WORKSPACE } from './api-keys.schemas';
import type { KeyResolver } from './key-resolver';

// Importers from before index.ts (modules/ingest) still find the key type here.
export type { ResolvedKey } from './key-resolver';

export interface ApiKeyView {
  id: string;
  name: string;
  scopes: string[];
  allowed_domains: string[];
  created_at: string;
}

export interface CreatedApiKey extends ApiKeyView {
  /** The raw secret: shown in this response only. */
  api_key: string;
}

export interface NewKeyInput {
  name: string;
  scopes: string[];
  allowed_domains?: string[] | undefined;
}

export const hashKey = (raw: string): string => createHash('sha256').update(raw).digest('hex');

/** Keys meant for browsers (ingest only, bound to domains) get a recognisable public prefix. */
export function generateSecret(scopes: readonly string[], allowedDomains: readonly string[]): string {
  const isPublic = scopes.length === 1 && scopes[0] === 'ingest' && allowedDomains.length > 0;
  return `${isPublic ? 'cdp_pk_' : 'cdp_sk_'}${randomBytes(32).toString('base64url')}`;
}

/** Shape of a raw secret; anything else is refused before any lookup. */
export const SECRET_SHAPE = /^cdp_[sp]k_[A-Za-z0-9_-]{43,}$/;

const present = (r: repo.ApiKeyRow): ApiKeyView => ({
  id: r.id,
  name: r.name,
  scopes: r.scopes,
  allowed_domains: r.allowed_domains,
  created_at: iso(r.created_at)!,
});

/** In the caller's transaction, or in a transaction of its own when given the database itself. */
const inTransaction = <T>(q: Db | Queryable, fn: (tx: Queryable) => Promise<T>): Promise<T> =>
  'transaction' in q ? q.transaction(fn) : fn(q);

/**
 * Creates a key, refusing one beyond KEYS_PER_WORKSPACE active keys (409). A workspace already over
 * the limit (from before it existed) keeps its keys; it cannot add one until it is under again.
 */
export async function createKey(
  q: Db | Queryable,
  workspaceId: string,
  input: NewKeyInput,
  rawSecret?: string,
): Promise<CreatedApiKey> {
  const allowedDomains = [...new Set((input.allowed_domains ?? []).map((d) => d.toLowerCase()))];
  const scopes = [...new Set(input.scopes)];
  const secret = rawSecret ?? generateSecret(scopes, allowedDomains);
  const row = await inTransaction(q, async (tx) => {
    await repo.lockWorkspaceKeys(tx, workspaceId);
    if ((await repo.countActiveKeys(tx, workspaceId)) >= KEYS_PER_WORKSPACE) {
      throw new AppError(
        'CONFLICT',
        `a workspace has at most ${KEYS_PER_WORKSPACE} active API keys; revoke one to create another`,
      );
    }
    return repo.insertKey(tx, {
      id: newSortableId('key'),
      workspaceId,
      name: input.name,
      keyHash: hashKey(secret),
      prefix: secret.slice(0, 11),
      scopes,
      allowedDomains,
    });
  });
  return { ...present(row), api_key: secret };
}

export async function listKeys(
  db: Db,
  codec: CursorCodec,
  workspaceId: string,
  page: PageRequest,
): Promise<Page<ApiKeyView>> {
  const afterSeq = page.after ? Number(page.after[0]) : null;
  const rows = await repo.listActiveKeys(db, workspaceId, afterSeq, page.limit + 1);
  return toPage(codec, page, rows, (r) => [r.seq], present);
}

/**
 * Revokes a key; resolves once no process accepts it any more (the resolver's eviction) and, for a
 * key with domains, once this process's preflight index has let them go.
 */
export async function revokeKey(
  db: Db,
  resolver: KeyResolver,
  origins: Pick<OriginIndex, 'changed'>,
  workspaceId: string,
  id: string,
): Promise<void> {
  const revoked = await db.transaction((tx) => repo.revokeKey(tx, workspaceId, id));
  if (!revoked) throw notFound('API key');
  await resolver.evict(revoked.keyHash);
  if (revoked.browser) await origins.changed(id);
}

/** Pages of the full load of the preflight index: keys per statement. */
const BROWSER_KEYS_PAGE = 500;

/**
 * The active keys' `allowed_domains`, for the preflight index (platform/http/cors.ts): read whole a
 * page at a time, and one key again each time its id is notified (created with domains, revoked).
 */
export function browserOriginSource(
  db: Db,
  opts: {
    /**
     * Whether notifications are known to arrive; default: the listening connection is up. The key
     * resolver knows better (its own heartbeats come back): runtime.ts passes its `trusted`.
     */
    watching?: () => boolean;
  } = {},
): OriginSource {
  const watching = opts.watching ?? (() => db.listening);
  const asOwner = (r: repo.BrowserKeyRow): OwnerPatterns => ({ owner: r.id, patterns: r.allowed_domains });
  return {
    async *loadAll() {
      let after = 0;
      for (;;) {
        const rows = await repo.listBrowserKeys(db, after, BROWSER_KEYS_PAGE);
        if (rows.length > 0) yield rows.map(asOwner);
        if (rows.length < BROWSER_KEYS_PAGE) return;
        after = Number(rows.at(-1)!.seq);
      }
    },
    async load(ids) {
      return (await repo.findBrowserKeys(db, ids)).map(asOwner);
    },
    watch: (onChange, onLost) => db.listen(repo.ORIGINS_CHANNEL, onChange, onLost),
    get watching() {
      return watching();
    },
  };
}

/** An active key's name and stored hash, from its raw secret (the console's sign-in); null if none. */
/**
 * Which key a secret belongs to, revoked keys included, or null: a refused console sign-in goes to
 * the audit trail of the key's workspace (the secret itself is never recorded).
 */
export async function identifyKey(
  db: Db,
  rawSecret: string,
): Promise<{ id: string; name: string; workspaceId: string } | null> {
  if (!SECRET_SHAPE.test(rawSecret)) return null;
  const row = await repo.findAnyKeyByHash(db, hashKey(rawSecret));
  return row ? { id: row.id, name: row.name, workspaceId: row.workspace_id } : null;
}

export async function describeActiveKey(
  db: Db,
  rawSecret: string,
): Promise<{ id: string; name: string; workspaceId: string; hash: string } | null> {
  if (!SECRET_SHAPE.test(rawSecret)) return null;
  const hash = hashKey(rawSecret);
  const row = await repo.findActiveKeyByHash(db, hash);
  return row ? { id: row.id, name: row.name, workspaceId: row.workspace_id, hash } : null;
}
