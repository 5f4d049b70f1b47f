import type { Db } from '../../platform/db';
import type { KeyGrant, KeyLookup } from '../../platform/http/key-credentials';
import type { MaybePromise } from '../../platform/http/principal';
import * as repo from './api-keys.repo';
import { hashKey, SECRET_SHAPE } from './api-keys.service';
import { createRevocations, type RevocationOptions } from './revocation';

/** An active key as the auth layer sees it (platform's `KeyGrant` port). */
export type ResolvedKey = KeyGrant;

export interface KeyCacheStats {
  /** Lookups answered from memory (a secret that recently found no key included). */
  hits: number;
  /** Lookups that went to the database. */
  misses: number;
  entries: number;
  /** False while revocations from other processes could be missed: the cache is bypassed then. */
  trusted: boolean;
  /** Other live service processes on this database, each of which must confirm a revocation. */
  peers: number;
}

export interface KeyResolverOptions extends RevocationOptions {
  ttlMs?: number;
  maxEntries?: number;
  /** How long a secret that found no key is answered from memory (default 60 s), and how many are kept. */
  unknownTtlMs?: number;
  maxUnknown?: number;
  /**
   * The workspace settings a key carries (its rate limits), read per request from the settings
   * accessor (modules/workspaces, wired by runtime.ts), so a change applies on the next request
   * and not when the key's entry expires. Without it, keys carry no settings (the defaults apply).
   * Synchronous when the settings are cached: a warm key then resolves without a promise.
   */
  settingsOf?: (workspaceId: string) => MaybePromise<Readonly<Record<string, unknown>>>;
}

export interface KeyResolver extends KeyLookup {
  /** The active key with this raw secret, or null; synchronous when the key and its settings are cached. */
  resolve(rawSecret: string): MaybePromise<ResolvedKey | null>;
  /**
   * The same, from the secret's stored hash: what a console session holds instead of the secret
   * (modules/console), so that a session is checked through this cache and its revocation protocol.
   */
  resolveHash(hash: string): MaybePromise<ResolvedKey | null>;
  /**
   * Drops a revoked key here, and resolves once every other live process has confirmed that it
   * dropped it too (or after `ackTimeoutMs`, logged): the caller answers the DELETE only then.
   */
  evict(hash: string): Promise<void>;
  stats(): KeyCacheStats;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Resolves secrets to keys with an in-memory cache, so a warm key costs no database round trip,
 * while a deleted key fails on the very next request on every process (revocation.ts says how).
 *
 * - The cache is used only while the revocation protocol trusts it.
 * - A lookup that overlapped an eviction does not fill the cache (generation check), so a
 *   concurrent request cannot re-insert a key that was revoked while it read the row.
 * - Entries expire after `ttlMs` (a safety net). Workspace settings are not part of an entry: they
 *   come from `settingsOf` on every request, which has its own, equally honest cache.
 */
export function createKeyResolver(db: Db, opts: KeyResolverOptions = {}): KeyResolver {
  const ttlMs = opts.ttlMs ?? 60_000;
  const maxEntries = opts.maxEntries ?? 10_000;
  type Entry = { key: ResolvedKey; expires: number; granted?: ResolvedKey };
  const cache = new Map<string, Entry>();
  const unknownTtlMs = opts.unknownTtlMs ?? 60_000;
  const maxUnknown = opts.maxUnknown ?? 10_000;
  /**
   * Hashes that found no key, until when. Secrets are 256 random bits, so one that matches nothing
   * now will not match a key created later (the one chosen secret, CDP_INITIAL_ADMIN_KEY, is stored
   * before the service serves): a page that keeps sending a revoked or mistyped key costs a lookup
   * a minute, not one per request. The oldest entry leaves first when full.
   */
  const unknown = new Map<string, number>();
  const rememberUnknown = (hash: string) => {
    unknown.delete(hash);
    if (unknown.size >= maxUnknown) unknown.delete(unknown.keys().next().value!);
    unknown.set(hash, Date.now() + unknownTtlMs);
  };
  /** Bumped by every eviction: a lookup that started before one must not fill the cache. */
  let generation = 0;
  let hits = 0;
  let misses = 0;

  const drop = (hash: string) => {
    generation++;
    cache.delete(hash);
  };
  const dropAll = () => {
    generation++;
    cache.clear();
  };
  const revocations = createRevocations(db, { drop, dropAll }, opts);
  const NO_SETTINGS = Object.freeze({});
  /**
   * The key with its workspace's current settings. A cached key keeps the last combination, so that
   * while the settings object stays the same every request gets the same object, not a fresh copy.
   */
  const withSettings = (key: ResolvedKey, memo?: Entry): MaybePromise<ResolvedKey> => {
    if (!opts.settingsOf) return key;
    const settings = opts.settingsOf(key.workspaceId);
    if (settings instanceof Promise) return settings.then((s) => ({ ...key, workspaceSettings: s }));
    if (memo?.granted?.workspaceSettings === settings) return memo.granted;
    const granted = { ...key, workspaceSettings: settings };
    if (memo) memo.granted = granted;
    return granted;
  };

  /** A key not in the cache (or while the cache is not trusted): one query. */
  async function lookup(hash: string, useCache: boolean): Promise<ResolvedKey | null> {
    misses++;
    const before = generation;
    const row = await repo.findActiveKeyByHash(db, hash);
    if (!row) {
      cache.delete(hash);
      rememberUnknown(hash);
      return null;
    }
    const key: ResolvedKey = {
      id: row.id,
      name: row.name,
      workspaceId: row.workspace_id,
      scopes: Object.freeze([...row.scopes]),
      allowedDomains: Object.freeze([...row.allowed_domains]),
      workspaceSettings: NO_SETTINGS,
    };
    if (useCache && revocations.trusted() && generation === before) {
      if (cache.size >= maxEntries) cache.clear();
      cache.set(hash, { key, expires: Date.now() + ttlMs });
    }
    return withSettings(key);
  }

  const byHash = (hash: string): MaybePromise<ResolvedKey | null> => {
    const useCache = revocations.trusted();
    if (useCache) {
      const hit = cache.get(hash);
      if (hit && hit.expires > Date.now()) {
        hits++;
        return withSettings(hit.key, hit);
      }
    }
    const unknownUntil = unknown.get(hash);
    if (unknownUntil !== undefined) {
      if (unknownUntil > Date.now()) {
        hits++;
        return null;
      }
      unknown.delete(hash);
    }
    return lookup(hash, useCache);
  };

  return {
    // Not async: a warm key is answered without a promise (every ingested event comes through here).
    resolve(rawSecret) {
      if (!SECRET_SHAPE.test(rawSecret)) return null;
      return byHash(hashKey(rawSecret));
    },

    resolveHash: byHash,

    async evict(hash) {
      drop(hash);
      await revocations.propagate(hash);
    },

    stats() {
      return {
        hits,
        misses,
        entries: cache.size,
        trusted: revocations.trusted(),
        peers: revocations.peerCount(),
      };
    },

    start: () => revocations.start(),
    stop: () => revocations.stop(),
  };
}
