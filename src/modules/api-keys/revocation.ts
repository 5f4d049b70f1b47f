import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { Db } from '../../platform/db';
import * as repo from './api-keys.repo';

/** A second path for revocations between processes (Redis pub/sub when REDIS_URL is set). */
export interface RevocationBroadcast {
  publish(hash: string): Promise<void>;
  subscribe(onHash: (hash: string) => void): Promise<() => Promise<void>>;
}

export interface RevocationOptions {
  /** The deployment's name (its database schema): processes of other deployments are not peers. */
  namespace?: string;
  broadcast?: RevocationBroadcast | null;
  /** How often a process says it is alive; a peer silent for 3 beats is forgotten. */
  heartbeatMs?: number;
  /**
   * How long a revocation waits for the confirmations of every peer before answering anyway
   * (default 3 beats). Keep it above 2.5 beats: by then a peer that cannot hear us has stopped
   * trusting its own cache (see `echoWindowMs`).
   */
  ackTimeoutMs?: number;
  log?: Pick<Logger, 'warn'>;
  /**
   * The protocol is not specific to keys: another cache (workspace settings) runs its own instance
   * with its own channels and namespace. `revoked` carries the token to drop (sent by the writer's
   * transaction), `evicted` the confirmations. Default: the key channels.
   */
  channels?: { revoked: string; evicted: string };
  /** How the "not confirmed in time" warning names what was propagated (default `key revocation`). */
  subject?: string;
}

/** The cache the protocol keeps honest. Tokens contain no spaces (the confirmations are space-separated). */
export interface RevocationTarget {
  drop(hash: string): void;
  dropAll(): void;
}

export interface Revocations {
  /** False while revocations from other processes could be missed: the cache must be bypassed. */
  trusted(): boolean;
  /** Other live service processes on this database, each of which must confirm a revocation. */
  peerCount(): number;
  /** Tells every process, and resolves once every live peer confirmed (or at `ackTimeoutMs`). */
  propagate(hash: string): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
}

interface PresenceMessage {
  ns: string;
  id: string;
  kind: 'hello' | 'beat' | 'bye';
}

/**
 * The cluster revocation protocol, so that a deleted key fails on the very next request on every
 * process while each process caches keys:
 *
 * - The revoking transaction sends `pg_notify(REVOCATION_CHANNEL, hash)`; every process evicts the
 *   key when the notification arrives (and, with Redis, also when the Redis broadcast does).
 * - Arrival alone is not ordered with the client's next request to another process, so the revoker
 *   also waits: every process confirms each eviction on EVICTED_CHANNEL, and `propagate` resolves
 *   only when every live peer (known from heartbeats on PRESENCE_CHANNEL) has confirmed. The DELETE
 *   response therefore leaves after the key is gone everywhere.
 * - The cache is trusted only while the notification stream is connected and this process has
 *   announced itself (its own hello came back); otherwise every lookup goes to the database.
 *
 * On PGlite only this process can use the database, so there are no peers to wait for.
 */
export function createRevocations(
  db: Db,
  target: RevocationTarget,
  opts: RevocationOptions = {},
): Revocations {
  const heartbeatMs = opts.heartbeatMs ?? 1_000;
  const peerExpiryMs = heartbeatMs * 3;
  /** Our own heartbeat must have come back this recently for the cache to be trusted. */
  const echoWindowMs = heartbeatMs * 2.5;
  const ackTimeoutMs = opts.ackTimeoutMs ?? heartbeatMs * 3;
  const namespace = opts.namespace ?? 'public';
  const channels = opts.channels ?? { revoked: repo.REVOCATION_CHANNEL, evicted: repo.EVICTED_CHANNEL };
  const shared = db.engine === 'postgres';
  const self = randomBytes(9).toString('base64url');

  let subscribed = false;
  /** Our own hello has come back, so peers know about us and wait for our confirmations. */
  let joined = !shared;
  /** When our own last presence message came back: proof that notifications still reach us. */
  let lastEcho = 0;
  let joinedWaiter: (() => void) | null = null;
  const peers = new Map<string, number>();
  /** Peers that said goodbye (recently): not confirming a revocation is expected of them. */
  const departed = new Map<string, number>();
  const acks = new Map<string, { from: Set<string>; at: number }>();
  const ackWaiters = new Set<() => void>();
  const unsubscribes: Array<() => Promise<void>> = [];
  let heartbeat: NodeJS.Timeout | null = null;

  // A listening connection can die silently (no error until TCP gives up) or the event loop can
  // stall: either way our own heartbeats stop coming back, and we stop trusting the cache before
  // a revoker's confirmation timeout runs out.
  const trusted = () =>
    subscribed && joined && db.listening && (!shared || Date.now() - lastEcho < echoWindowMs);
  const livePeers = () => {
    const now = Date.now();
    return [...peers].filter(([, seen]) => now - seen < peerExpiryMs).map(([id]) => id);
  };
  const wakeWaiters = () => {
    for (const w of [...ackWaiters]) w();
  };
  // Best effort: a lost message is covered by the next heartbeat or by the ack timeout.
  const send = (channel: string, payload: string) => repo.notify(db, channel, payload).catch(() => {});
  const announce = (kind: PresenceMessage['kind']) =>
    send(repo.PRESENCE_CHANNEL, JSON.stringify({ ns: namespace, id: self, kind } satisfies PresenceMessage));

  const onRevoked = (hash: string) => {
    target.drop(hash);
    if (shared) void send(channels.evicted, `${hash} ${self}`);
  };

  const onEvicted = (payload: string) => {
    const [hash, from] = payload.split(' ');
    if (!hash || !from || from === self) return;
    let entry = acks.get(hash);
    if (!entry) {
      entry = { from: new Set(), at: Date.now() };
      acks.set(hash, entry);
    }
    entry.from.add(from);
    wakeWaiters();
  };

  const onPresence = (payload: string) => {
    let msg: PresenceMessage;
    try {
      msg = JSON.parse(payload) as PresenceMessage;
    } catch {
      return;
    }
    if (msg.ns !== namespace || typeof msg.id !== 'string') return;
    if (msg.id === self) {
      if (msg.kind === 'bye' || !db.listening) return;
      lastEcho = Date.now();
      if (msg.kind === 'hello') {
        joined = true;
        joinedWaiter?.();
      }
      return;
    }
    if (msg.kind === 'bye') {
      peers.delete(msg.id);
      departed.set(msg.id, Date.now());
      wakeWaiters();
      return;
    }
    departed.delete(msg.id);
    const known = peers.has(msg.id);
    peers.set(msg.id, Date.now());
    // A newcomer learns about us at once instead of at our next heartbeat.
    if (msg.kind === 'hello' && !known && joined) void announce('beat');
  };

  const onListenerLost = () => {
    target.dropAll();
    if (!shared) return;
    joined = false;
    // Peers need not wait for us while we bypass the cache; the pool may still reach the database.
    void announce('bye');
  };

  const tick = () => {
    const now = Date.now();
    for (const [id, seen] of peers) if (now - seen >= peerExpiryMs) peers.delete(id);
    for (const [hash, a] of acks) if (now - a.at > 60_000) acks.delete(hash);
    for (const [id, at] of departed) if (now - at > 60_000) departed.delete(id);
    wakeWaiters();
    if (db.listening) void announce(joined ? 'beat' : 'hello');
  };

  const join = async () => {
    const echoed = new Promise<void>((resolve) => {
      joinedWaiter = resolve;
      setTimeout(resolve, ackTimeoutMs).unref();
    });
    await announce('hello');
    await echoed;
    joinedWaiter = null;
  };

  return {
    trusted,
    peerCount: () => livePeers().length,

    async propagate(hash) {
      if (opts.broadcast) {
        await opts.broadcast.publish(hash).catch((err: unknown) => {
          opts.log?.warn({ err: String(err) }, 'could not publish a key revocation to Redis');
        });
      }
      if (!shared || !subscribed) return;
      const expected = livePeers();
      const missing = () => {
        if (!subscribed) return [];
        const got = acks.get(hash)?.from;
        return expected.filter((id) => peers.has(id) && !got?.has(id));
      };
      if (missing().length === 0) return;
      // Ends when every expected peer confirmed, left, or went silent long enough to be forgotten
      // (by then it has stopped trusting its cache), or at the timeout.
      await new Promise<void>((resolve) => {
        const check = () => {
          if (missing().length === 0) finish();
        };
        const finish = () => {
          clearTimeout(timer);
          ackWaiters.delete(check);
          resolve();
        };
        const timer = setTimeout(finish, ackTimeoutMs);
        ackWaiters.add(check);
      });
      const confirmed = acks.get(hash)?.from;
      const unconfirmed = expected.filter((id) => !confirmed?.has(id) && !departed.has(id));
      if (unconfirmed.length > 0 && subscribed) {
        opts.log?.warn(
          { peers: unconfirmed },
          `${opts.subject ?? 'key revocation'} not confirmed by every service process in time; answering anyway`,
        );
      }
    },

    async start() {
      unsubscribes.push(await db.listen(channels.revoked, onRevoked, onListenerLost));
      if (shared) {
        unsubscribes.push(await db.listen(repo.PRESENCE_CHANNEL, onPresence));
        unsubscribes.push(await db.listen(channels.evicted, onEvicted));
      }
      if (opts.broadcast) unsubscribes.push(await opts.broadcast.subscribe(onRevoked));
      subscribed = true;
      if (shared) {
        await join();
        heartbeat = setInterval(tick, heartbeatMs);
        heartbeat.unref();
      }
    },

    async stop() {
      if (!subscribed) return;
      subscribed = false;
      if (heartbeat) clearInterval(heartbeat);
      if (shared) await announce('bye');
      target.dropAll();
      wakeWaiters();
      for (const unsubscribe of unsubscribes.splice(0).reverse()) await unsubscribe();
    },
  };
}
