import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { waitUntil } from '../../../test/wait';
import { migrate } from '../../platform/db/migrate';
import { NOTIFY_SQL } from '../../platform/db/notify';
import { createPgliteDb } from '../../platform/db/pglite';
import type { Db, QueryResult } from '../../platform/db/port';
import { createWorkspace } from '../workspaces/workspaces.service';
import { PRESENCE_CHANNEL } from './api-keys.repo';
import { createKey, hashKey } from './api-keys.service';
import { createKeyResolver, type KeyResolver } from './key-resolver';

/**
 * The key cache's revocation protocol, with several "processes" simulated in one: each resolver
 * gets its own view of one shared database whose notifications travel over an in-memory bus. The
 * bus can hold back one process's deliveries, which is exactly the slow-notification case that
 * makes plain NOTIFY insufficient.
 */
interface Bus {
  publish(channel: string, payload: string): void;
  subscribe(channel: string, deliver: (payload: string) => void): () => void;
}

function createBus(): Bus {
  const subs = new Map<string, Set<(payload: string) => void>>();
  return {
    publish(channel, payload) {
      for (const deliver of subs.get(channel) ?? []) deliver(payload);
    },
    subscribe(channel, deliver) {
      const set = subs.get(channel) ?? new Set();
      subs.set(channel, set);
      set.add(deliver);
      return () => set.delete(deliver);
    },
  };
}

interface FakeProcess extends Db {
  /** Queue this process's incoming notifications until release(). */
  hold(): void;
  release(): void;
  /** The listening connection drops (onLost fires) / comes back. */
  loseListener(): void;
  restoreListener(): void;
  /**
   * The next key lookup reads its row, then waits for `gate` before returning it; the answer
   * resolves once it is held there.
   */
  gateNextLookup(gate: Promise<void>): Promise<void>;
  /** Presence messages this process has sent that say `kind` (hello, beat, bye). */
  presenceSent(kind: string): number;
}

const isNotify = (sql: string) => sql === NOTIFY_SQL;

function asProcess(shared: Db, bus: Bus): FakeProcess {
  let held: Array<() => void> | null = null;
  let listening = true;
  let gate: Promise<void> | null = null;
  let gateReached: (() => void) | null = null;
  const presence = new Map<string, number>();
  const lost = new Set<() => void>();
  const run = async <R>(sql: string, params?: readonly unknown[]): Promise<QueryResult<R>> => {
    if (isNotify(sql)) {
      const [channel, payload] = [String(params![0]), String(params![1])];
      if (channel === PRESENCE_CHANNEL) {
        const { kind } = JSON.parse(payload) as { kind: string };
        presence.set(kind, (presence.get(kind) ?? 0) + 1);
      }
      bus.publish(channel, payload);
      return { rows: [], rowCount: 1 };
    }
    const res = await shared.query<R>(sql, params);
    if (gate && sql.includes('key_hash = $1')) {
      const g = gate;
      gate = null;
      gateReached?.();
      await g;
    }
    return res;
  };
  return {
    engine: 'postgres',
    laneName: 'foreground',
    foregroundSeenAt: () => Number.NEGATIVE_INFINITY,
    interactiveSeenAt: () => Number.NEGATIVE_INFINITY,
    lane() {
      return this;
    },
    query: run,
    exec: (sql) => shared.exec(sql),
    transaction: (fn) => fn({ query: run, exec: (sql) => shared.exec(sql) }),
    async listen(channel, handler, onLost) {
      const unsubscribe = bus.subscribe(channel, (payload) => {
        if (!listening) return;
        const deliver = () => handler(payload);
        if (held) held.push(deliver);
        else setImmediate(deliver);
      });
      if (onLost) lost.add(onLost);
      return async () => {
        unsubscribe();
        if (onLost) lost.delete(onLost);
      };
    },
    get listening() {
      return listening;
    },
    close: async () => {},
    hold() {
      held = [];
    },
    release() {
      const queued = held ?? [];
      held = null;
      for (const deliver of queued) deliver();
    },
    loseListener() {
      listening = false;
      for (const h of lost) h();
    },
    restoreListener() {
      listening = true;
    },
    gateNextLookup(g) {
      gate = g;
      return new Promise<void>((r) => {
        gateReached = r;
      });
    },
    presenceSent: (kind) => presence.get(kind) ?? 0,
  };
}

const until = (what: string, check: () => boolean) =>
  waitUntil(check, { what, timeoutMs: 2_000, intervalMs: 5 });

/** Whether `p` has settled, once the callbacks already due have run. */
const hasSettled = async (p: Promise<unknown>): Promise<boolean> => {
  let done = false;
  void p.then(() => {
    done = true;
  });
  await new Promise((r) => setImmediate(r));
  return done;
};

let db: Db;
let workspaceId: string;
const bus = createBus();
const resolvers: KeyResolver[] = [];

beforeAll(async () => {
  db = await createPgliteDb({ dataDir: null });
  await migrate(db);
  workspaceId = (await createWorkspace(db, 'resolver')).workspace.id;
});
afterAll(async () => {
  for (const r of resolvers) await r.stop();
  await db?.close();
});

async function newKey(): Promise<{ secret: string; hash: string }> {
  const secret = (await createKey(db, workspaceId, { name: 'k', scopes: ['viewer'] })).api_key;
  return { secret, hash: hashKey(secret) };
}

const revokeInDb = (hash: string) =>
  db.query('UPDATE api_keys SET revoked_at = now() WHERE key_hash = $1', [hash]);

/** Each test is its own deployment (namespace), so a failed test's leftovers are never its peers. */
async function startProcess(
  ns: string,
  opts: { heartbeatMs?: number; ackTimeoutMs?: number; log?: { warn: () => void } } = {},
) {
  const proc = asProcess(db, bus);
  const resolver = createKeyResolver(proc, {
    heartbeatMs: opts.heartbeatMs ?? 40,
    ackTimeoutMs: opts.ackTimeoutMs ?? 1_000,
    namespace: ns,
    log: opts.log ?? { warn: () => {} },
  });
  await resolver.start();
  resolvers.push(resolver);
  return { proc, resolver };
}

describe('key resolver across processes', () => {
  it('answers a revocation only after a slow peer has dropped the key', async () => {
    // Slow heartbeats: B keeps trusting its cache while it is held back for a moment.
    const a = await startProcess('slow peer', { heartbeatMs: 500 });
    const b = await startProcess('slow peer', { heartbeatMs: 500 });
    await until(
      'A and B to know each other',
      () => a.resolver.stats().peers === 1 && b.resolver.stats().peers === 1,
    );
    const { secret, hash } = await newKey();
    await b.resolver.resolve(secret);
    expect(await b.resolver.resolve(secret)).not.toBeNull();
    expect(b.resolver.stats().hits).toBeGreaterThan(0);

    b.proc.hold();
    await revokeInDb(hash);
    bus.publish('cdp_key_revoked', hash);
    const beats = a.proc.presenceSent('beat');
    const revoked = a.resolver.evict(hash);
    // B has not heard yet and would still serve the key from memory: A must not answer yet, not
    // even after its next heartbeat, at which it looks again at who has confirmed.
    await waitUntil(() => a.proc.presenceSent('beat') > beats, { what: "A's next heartbeat" });
    expect(await hasSettled(revoked)).toBe(false);
    expect(await b.resolver.resolve(secret)).not.toBeNull();

    b.proc.release();
    await revoked;
    expect(await b.resolver.resolve(secret)).toBeNull();
    await Promise.all([a.resolver.stop(), b.resolver.stop()]);
  });

  it('does not let a lookup that overlapped a revocation put the key back in the cache', async () => {
    const b = await startProcess('overlap');
    const { secret, hash } = await newKey();
    let open!: () => void;
    const held = b.proc.gateNextLookup(new Promise<void>((r) => (open = r)));
    // The lookup reads the row while the key is still active, then stalls…
    const lookup = b.resolver.resolve(secret);
    await held;
    // …meanwhile the key is revoked and B hears of it…
    await revokeInDb(hash);
    bus.publish('cdp_key_revoked', hash);
    await new Promise((r) => setImmediate(r));
    open();
    await lookup;
    // …so the next request must go to the database again and find the key gone.
    expect(await b.resolver.resolve(secret)).toBeNull();
    await b.resolver.stop();
  });

  it('bypasses the cache while its notification stream is down, and trusts it again once rejoined', async () => {
    const b = await startProcess('listener down');
    const { secret } = await newKey();
    await b.resolver.resolve(secret);
    await b.resolver.resolve(secret);
    expect(b.resolver.stats()).toMatchObject({ trusted: true, entries: 1 });

    b.proc.loseListener();
    expect(b.resolver.stats()).toMatchObject({ trusted: false, entries: 0 });
    const misses = b.resolver.stats().misses;
    await b.resolver.resolve(secret);
    await b.resolver.resolve(secret);
    expect(b.resolver.stats().misses).toBe(misses + 2);

    b.proc.restoreListener();
    await until('B to trust its cache again', () => b.resolver.stats().trusted);
    await b.resolver.resolve(secret);
    const hits = b.resolver.stats().hits;
    await b.resolver.resolve(secret);
    expect(b.resolver.stats().hits).toBe(hits + 1);
    await b.resolver.stop();
  });

  it('waits at most the timeout for a deaf peer, which has stopped trusting its cache by then; not at all for one that left', async () => {
    const warn = vi.fn();
    const a = await startProcess('goodbye', { heartbeatMs: 100, ackTimeoutMs: 300, log: { warn } });
    const b = await startProcess('goodbye', { heartbeatMs: 100 });
    await until(
      'A to know B, and B to trust its cache',
      () => a.resolver.stats().peers === 1 && b.resolver.stats().trusted,
    );

    const silent = await newKey();
    await b.resolver.resolve(silent.secret);
    expect(b.resolver.stats().entries).toBe(1);
    // B goes deaf without noticing (a silently dead connection, or a stalled event loop).
    b.proc.hold();
    await revokeInDb(silent.hash);
    bus.publish('cdp_key_revoked', silent.hash);
    const t0 = performance.now();
    await a.resolver.evict(silent.hash);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(290);
    expect(warn).toHaveBeenCalledOnce();
    // A answered without B's confirmation, but by then B had stopped trusting its cache: its own
    // heartbeats no longer came back. The revoked key fails on B although B never heard.
    expect(b.resolver.stats().trusted).toBe(false);
    expect(await b.resolver.resolve(silent.secret)).toBeNull();

    b.proc.release();
    await b.resolver.stop();
    await until('A to hear that B left', () => a.resolver.stats().peers === 0);
    const gone = await newKey();
    const t1 = performance.now();
    await a.resolver.evict(gone.hash);
    expect(performance.now() - t1).toBeLessThan(250);
    expect(warn).toHaveBeenCalledOnce();
    await a.resolver.stop();
  });
});

describe('a warm key', () => {
  it('resolves without a promise, to the same grant while its settings are the same, and follows a settings change', async () => {
    let settings: Readonly<Record<string, unknown>> = { rate_limits: { standard: 100 } };
    // The settings accessor answers from its cache synchronously, as the service's store does.
    const resolver = createKeyResolver(asProcess(db, bus), {
      namespace: 'warm key',
      log: { warn: () => {} },
      settingsOf: () => settings,
    });
    await resolver.start();
    resolvers.push(resolver);
    const { secret } = await newKey();

    const cold = resolver.resolve(secret);
    expect(cold).toBeInstanceOf(Promise);
    expect((await cold)?.workspaceSettings).toBe(settings);
    const warm = resolver.resolve(secret);
    expect(warm).not.toBeInstanceOf(Promise);
    expect(resolver.resolve(secret)).toBe(warm);

    settings = { rate_limits: { standard: 5 } };
    const changed = resolver.resolve(secret);
    expect(changed).not.toBe(warm);
    expect((changed as Awaited<typeof changed>)?.workspaceSettings).toBe(settings);
    await resolver.stop();
  });
});
