import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitUntil } from '../../../test/wait';
import { migrate } from '../../platform/db/migrate';
import { createPgliteDb } from '../../platform/db/pglite';
import type { Db, QueryResult } from '../../platform/db/port';
import { createSettingsStore, type SettingsStore } from './settings.store';
import { createWorkspace } from './workspaces.service';

/**
 * The settings accessor's cache on one process (PGlite). Across processes the protocol is the key
 * cache's (api-keys/key-resolver.test.ts); test/settings-propagation.test.ts runs two real ones.
 */
let base: Db;
let gate: Promise<void> | null = null;
/** Notifications delivered to the stores' listeners so far. */
let heard = 0;
const stores: SettingsStore[] = [];

/**
 * The database, with a hook that holds the next settings lookup after it has read its rows, and a
 * count of the notifications its listeners receive.
 */
const db = (): Db => ({
  engine: base.engine,
  laneName: 'foreground',
  foregroundSeenAt: () => Number.NEGATIVE_INFINITY,
  interactiveSeenAt: () => Number.NEGATIVE_INFINITY,
  lane() {
    return this;
  },
  get listening() {
    return base.listening;
  },
  async query<R>(sql: string, params?: readonly unknown[]): Promise<QueryResult<R>> {
    const res = await base.query<R>(sql, params);
    if (gate && sql.includes('FROM workspaces WHERE id = ANY')) {
      const g = gate;
      gate = null;
      await g;
    }
    return res;
  },
  exec: (sql) => base.exec(sql),
  transaction: (fn) => base.transaction(fn),
  listen: (channel, handler, onLost) =>
    base.listen(
      channel,
      (payload) => {
        heard++;
        handler(payload);
      },
      onLost,
    ),
  close: async () => {},
});

beforeAll(async () => {
  base = await createPgliteDb({ dataDir: null });
  await migrate(base);
});
afterAll(async () => {
  for (const s of stores) await s.stop();
  await base?.close();
});

async function started(): Promise<SettingsStore> {
  const store = createSettingsStore(db());
  await store.start();
  stores.push(store);
  return store;
}

const setLimit = (workspaceId: string, n: number) =>
  base.query('UPDATE workspaces SET settings = $2::jsonb WHERE id = $1', [
    workspaceId,
    JSON.stringify({ rate_limits: { requests_per_minute: n } }),
  ]);

const until = (what: string, check: () => boolean) =>
  waitUntil(check, { what, timeoutMs: 2_000, intervalMs: 5 });

describe('the settings accessor', () => {
  it('reads a workspace once, then from memory, until any writer changes its settings', async () => {
    const store = await started();
    const { id } = (await createWorkspace(base, 'cached')).workspace;
    expect((await store.read(base, id)).rate_limits.requests_per_minute).toBe(1000);
    expect((await store.read(base, id)).rate_limits.requests_per_minute).toBe(1000);
    expect(store.stats()).toMatchObject({ hits: 1, misses: 1, entries: 1, trusted: true });

    // A hand-written UPDATE: the trigger's notification drops the entry, no expiry needed.
    await setLimit(id, 42);
    await until('the notification to drop the entry', () => store.stats().entries === 0);
    expect((await store.read(base, id)).rate_limits.requests_per_minute).toBe(42);
  });

  it('never puts back settings it read before a change', async () => {
    const store = await started();
    const { id } = (await createWorkspace(base, 'raced')).workspace;
    let release!: () => void;
    gate = new Promise((r) => {
      release = r;
    });
    const reading = store.read(db(), id);
    await until('the read to hold its rows', () => gate === null);
    const before = heard;
    await setLimit(id, 7);
    // The change's notification arrives while the old row is in flight.
    await until('the change to be heard', () => heard > before);
    release();
    expect((await reading).rate_limits.requests_per_minute).toBe(1000);
    expect((await store.read(base, id)).rate_limits.requests_per_minute).toBe(7);
  });

  it('reads from the database every time while it cannot hear changes (not started)', async () => {
    const store = createSettingsStore(db());
    const { id } = (await createWorkspace(base, 'deaf')).workspace;
    await store.read(base, id);
    await store.read(base, id);
    expect(store.stats()).toMatchObject({ hits: 0, misses: 2, entries: 0, trusted: false });
  });

  it('answers the defaults for a workspace that does not exist', async () => {
    const store = await started();
    const s = await store.read(base, '1b4e28ba-2fa1-41d2-883f-0016d3cca427');
    expect(s.merge_cap).toBe(100);
  });
});
