import type { Db, Queryable } from '../../platform/db';
import { createRevocations, type RevocationOptions } from '../api-keys';
import { effectiveSettings } from './settings';
import type { WorkspaceSettings } from './settings.schemas';
import * as repo from './workspaces.repo';

/**
 * The one accessor of workspace settings: the rate limiter (through the key resolver), identity
 * resolution (junk identifiers, merge cap) and the intelligence jobs read them here, from a cache
 * per process. A change reaches every process on the very next request, not when an entry expires:
 *
 * - every write of `workspaces.settings` notifies `cdp_settings_changed` (a trigger,
 *   migrations/0011), so each process drops the workspace's entry when the notification arrives;
 * - the writer then waits for every live process to confirm (`changed`), exactly like a key
 *   revocation (api-keys/revocation.ts runs the same protocol on its own channels), so the PATCH
 *   answers only once no process can serve the old settings;
 * - while notifications could be missed (listening connection down, own heartbeats not coming
 *   back) the cache is bypassed and every read goes to the database.
 */
export interface SettingsStore {
  /** The workspace's settings in effect (defaults for a workspace that does not exist). */
  read(q: Queryable, workspaceId: string): Promise<WorkspaceSettings>;
  /**
   * The cached settings, synchronously, when the cache holds them and is trusted; else undefined
   * (then `read`). Every request's rate limit comes from here: a hit costs no promise.
   */
  cached(workspaceId: string): WorkspaceSettings | undefined;
  /** Several workspaces at once, with one query for those not cached (the pipeline, per batch). */
  readMany(q: Queryable, workspaceIds: readonly string[]): Promise<ReadonlyMap<string, WorkspaceSettings>>;
  /**
   * After a committed change (`token` = `<workspace id>:<settings_version>`, as notified): drops the
   * entry here and resolves once every other live process confirmed it dropped it too.
   */
  changed(token: string): Promise<void>;
  /** For /system/stats; `peers`: the other live processes a change waits for. */
  stats(): { hits: number; misses: number; entries: number; trusted: boolean; peers: number };
  start(): Promise<void>;
  stop(): Promise<void>;
}

export const SETTINGS_CHANNEL = 'cdp_settings_changed';
/** Each process confirms here (`<token> <instance id>`) that it dropped the changed settings. */
export const SETTINGS_DROPPED_CHANNEL = 'cdp_settings_dropped';

export interface SettingsStoreOptions extends Omit<RevocationOptions, 'channels' | 'subject' | 'broadcast'> {
  /** A safety net only: changes arrive by notification. */
  ttlMs?: number;
  maxEntries?: number;
}

export function createSettingsStore(db: Db, opts: SettingsStoreOptions = {}): SettingsStore {
  const ttlMs = opts.ttlMs ?? 60_000;
  const maxEntries = opts.maxEntries ?? 10_000;
  const cache = new Map<string, { settings: WorkspaceSettings; expires: number }>();
  /** Bumped by every drop: a read that started before one must not fill the cache. */
  let generation = 0;
  let hits = 0;
  let misses = 0;

  const workspaceOf = (token: string) => token.split(':')[0]!;
  const drop = (token: string) => {
    generation++;
    cache.delete(workspaceOf(token));
  };
  const dropAll = () => {
    generation++;
    cache.clear();
  };
  const protocol = createRevocations(
    db,
    { drop, dropAll },
    {
      ...opts,
      // Its own presence namespace: these peers are the other processes' settings caches.
      namespace: `${opts.namespace ?? 'public'}/settings`,
      channels: { revoked: SETTINGS_CHANNEL, evicted: SETTINGS_DROPPED_CHANNEL },
      subject: 'settings change',
    },
  );

  /** The cached entry if it has not expired (whether the cache is trusted is the caller's check). */
  const fresh = (id: string, now: number) => {
    const hit = cache.get(id);
    return hit && hit.expires > now ? hit.settings : undefined;
  };

  async function readMany(q: Queryable, ids: readonly string[]) {
    const out = new Map<string, WorkspaceSettings>();
    const useCache = protocol.trusted();
    const now = Date.now();
    const missing: string[] = [];
    for (const id of new Set(ids)) {
      const hit = useCache ? fresh(id, now) : undefined;
      if (hit) {
        hits++;
        out.set(id, hit);
      } else missing.push(id);
    }
    if (missing.length === 0) return out;
    misses += missing.length;
    const before = generation;
    const rows = await repo.loadSettings(q, missing);
    const fill = useCache && protocol.trusted() && generation === before;
    if (fill && cache.size + rows.length > maxEntries) cache.clear();
    for (const row of rows) {
      const settings = effectiveSettings(row.settings);
      out.set(row.id, settings);
      if (fill) cache.set(row.id, { settings, expires: now + ttlMs });
    }
    return out;
  }

  return {
    readMany,
    cached(workspaceId) {
      const hit = protocol.trusted() ? fresh(workspaceId, Date.now()) : undefined;
      if (hit) hits++;
      return hit;
    },
    async read(q, workspaceId) {
      return (await readMany(q, [workspaceId])).get(workspaceId) ?? effectiveSettings({});
    },
    async changed(token) {
      drop(token);
      await protocol.propagate(token);
    },
    stats: () => ({
      hits,
      misses,
      entries: cache.size,
      trusted: protocol.trusted(),
      peers: protocol.peerCount(),
    }),
    start: () => protocol.start(),
    stop: () => protocol.stop(),
  };
}
