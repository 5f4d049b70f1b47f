import { createHash, randomBytes } from 'node:crypto';
import type { CursorCodec, Page, PageRequest } from '../../platform/cursor';
import { toPage } from '../../platform/cursor';
import type { Db, Queryable } from '../../platform/db';
import { notFound } from '../../platform/errors';
import { iso } from '../../platform/http/envelope';
import { newSortableId } from '../../platform/ids';
import * as repo from './api-keys.repo';
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

export async function createKey(
  q: Queryable,
  workspaceId: string,
  input: NewKeyInput,
  rawSecret?: string,
): Promise<CreatedApiKey> {
  const allowedDomains = [...new Set((input.allowed_domains ?? []).map((d) => d.toLowerCase()))];
  const scopes = [...new Set(input.scopes)];
  const secret = rawSecret ?? generateSecret(scopes, allowedDomains);
  const row = await repo.insertKey(q, {
    id: newSortableId('key'),
    workspaceId,
    name: input.name,
    keyHash: hashKey(secret),
    prefix: secret.slice(0, 11),
    scopes,
    allowedDomains,
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

export async function revokeKey(
  db: Db,
  resolver: KeyResolver,
  workspaceId: string,
  id: string,
): Promise<void> {
  const hash = await db.transaction((tx) => repo.revokeKey(tx, workspaceId, id));
  if (!hash) throw notFound('API key');
  await resolver.evict(hash);
}

/** Every allowed_domains pattern of every active key: what a CORS preflight (no key) may answer for. */
export function listBrowserOriginPatterns(q: Queryable): Promise<string[]> {
  return repo.listAllowedDomainPatterns(q);
}
