import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { buildApp } from './app';
import { type Config, ConfigError } from './config';
import {
  type CreatedApiKey,
  createKeyResolver,
  type RevocationBroadcast,
  SECRET_SHAPE,
} from './modules/api-keys';
import { createEventWriter } from './modules/ingest/ingest.service';
import { createSettingsStore } from './modules/workspaces';
import { bootstrapDefaultWorkspace, loadCursorSecret } from './modules/workspaces/workspaces.service';
import { createCursorCodec } from './platform/cursor';
import { type Db, openDb } from './platform/db';
import { migrate } from './platform/db/migrate';
import { keyResolvers } from './platform/http/key-credentials';
import { createRateLimits } from './platform/http/rate-limit';
import type { App, AppDeps } from './platform/http/types';
import { startWorkers } from './worker';

export interface Runtime {
  deps: AppDeps;
  /** The HTTP app; null when ROLE=worker. */
  app: App | null;
  /** Set on the very first start of an empty database: print its key once. */
  bootstrap: { workspaceId: string; apiKey: CreatedApiKey } | null;
  /** Stops in order: HTTP (drains in-flight requests), the event writer, workers, then storage. */
  stop(opts?: StopOptions): Promise<void>;
  /**
   * True once stop() has seen every event write the writer accepted committed (or failed): from
   * then on nothing a client may have been told is stored depends on this process any more.
   */
  eventsDrained(): boolean;
}

export interface StopOptions {
  /**
   * After this long, the connections still open (a request still running, a body still trickling
   * in, a client that never sends) are closed, and the stop carries on. Unset: wait for them.
   */
  closeConnectionsAfterMs?: number;
}

export interface RuntimeOptions {
  /** An already open database (tests pass theirs); otherwise one is opened from the config. */
  db?: Db;
}

/** Wires config → storage → migrations → bootstrap → roles. Used by `cdp start` and by tests. */
export async function createRuntime(
  config: Readonly<Config>,
  log: Logger,
  opts: RuntimeOptions = {},
): Promise<Runtime> {
  if (config.initialAdminKey !== null && !SECRET_SHAPE.test(config.initialAdminKey)) {
    // Checked here because a key of another shape would be stored but could never authenticate.
    throw new ConfigError(
      'CDP_INITIAL_ADMIN_KEY must be cdp_sk_ followed by at least 43 characters of A-Z a-z 0-9 _ -',
    );
  }
  const db = opts.db ?? (await openDb(config));
  const closers: Array<() => Promise<void>> = [];
  try {
    const applied = await migrate(db);
    if (applied.length > 0) log.info({ applied }, 'migrations applied');

    const created = await bootstrapDefaultWorkspace(db, config.initialAdminKey);
    const cursors = createCursorCodec(await loadCursorSecret(db));
    // One deployment = one database schema; its processes share rate limits and revocations, and
    // nothing of another deployment using the same Redis or PostgreSQL database.
    const namespace = config.databaseSchema ?? 'public';

    let redis: Redis | null = null;
    if (config.redisUrl) {
      const r = new Redis(config.redisUrl, {
        maxRetriesPerRequest: 1,
        enableOfflineQueue: false,
        // A slow Redis must not hold requests: the rate limiter falls back to its memory insurance.
        commandTimeout: 500,
        lazyConnect: true,
      });
      r.on('error', (err) => log.warn({ err: err.message }, 'redis error'));
      await r.connect().catch((err: Error) => {
        r.disconnect();
        throw Object.assign(new Error(`Redis at REDIS_URL did not answer: ${err.message}`), {
          code: 'REDIS_UNREACHABLE',
        });
      });
      redis = r;
      closers.push(async () => {
        r.disconnect();
      });
    }

    // Started before the keys: a request's rate limit comes from the settings of its workspace.
    const settings = createSettingsStore(db, { namespace, log });
    await settings.start();
    closers.push(() => settings.stop());

    const keys = createKeyResolver(db, {
      namespace,
      log,
      broadcast: redis ? redisRevocations(redis, `cdp:${namespace}:key-revoked`, log) : null,
      settingsOf: (workspaceId) => settings.cached(workspaceId) ?? settings.read(db, workspaceId),
    });
    await keys.start();
    closers.push(() => keys.stop());

    const events = createEventWriter(db, log);
    const deps: AppDeps = {
      config,
      db,
      log,
      cursors,
      keys,
      settings,
      // X-API-Key, then the Segment ways (Basic auth, body writeKey) on ingest routes.
      principals: keyResolvers(keys),
      limits: createRateLimits(redis, { keyPrefix: `cdp:${namespace}:rl` }),
      redis,
      events,
    };

    let app: App | null = null;
    if (config.role !== 'worker') {
      const https =
        config.tlsCertFile && config.tlsKeyFile
          ? { cert: readFileSync(config.tlsCertFile), key: readFileSync(config.tlsKeyFile) }
          : null;
      app = await buildApp(deps, { https });
      await app.ready();
    }
    if (config.role !== 'api') {
      const stopWorkers = await startWorkers(deps);
      closers.push(stopWorkers);
    }
    // Closers run in reverse: after HTTP has closed, acknowledged-but-queued events are committed
    // before the workers stop and the database closes.
    let eventsDrained = false;
    closers.push(async () => {
      await events.close();
      eventsDrained = true;
    });

    let stopped = false;
    return {
      deps,
      app,
      bootstrap: created ? { workspaceId: created.workspace.id, apiKey: created.api_key } : null,
      eventsDrained: () => eventsDrained,
      async stop(stopOpts = {}) {
        if (stopped) return;
        stopped = true;
        if (app) await drainHttp(app, log, stopOpts.closeConnectionsAfterMs);
        for (const close of closers.reverse())
          await close().catch((err) => log.error({ err }, 'shutdown step failed'));
        if (!opts.db) await db.close();
      },
    };
  } catch (err) {
    for (const close of closers.reverse()) await close().catch(() => {});
    if (!opts.db) await db.close().catch(() => {});
    throw err;
  }
}

/**
 * Revocations over Redis pub/sub: a second path beside PostgreSQL NOTIFY. The subscriber needs its
 * own connection (a subscribed Redis connection can do nothing else); ioredis re-subscribes after
 * a reconnect.
 */
function redisRevocations(redis: Redis, channel: string, log: Logger): RevocationBroadcast {
  return {
    async publish(hash) {
      await redis.publish(channel, hash);
    },
    async subscribe(onHash) {
      const sub = redis.duplicate({ enableOfflineQueue: true, commandTimeout: undefined });
      sub.on('error', (err) => log.warn({ err: err.message }, 'redis subscriber error'));
      sub.on('message', (ch: string, hash: string) => {
        if (ch === channel) onHash(hash);
      });
      await sub.connect();
      await sub.subscribe(channel);
      return async () => {
        sub.disconnect();
      };
    },
  };
}

/**
 * Closes the HTTP server once every in-flight request has been answered. Node's server.close()
 * drops the connections that are idle at that moment, but a request still running answers with
 * keep-alive and its connection then stays open until the client lets it go (72 s here), which
 * would hold the drain past SHUTDOWN_TIMEOUT_MS. So connections are swept as they become idle.
 * A connection that never becomes idle (a body arriving a byte a second, a request still running)
 * is closed at `closeAfterMs`: the stop goes on to commit queued events and close storage instead
 * of being killed by its own deadline with that work undone.
 */
async function drainHttp(app: App, log: Logger, closeAfterMs?: number): Promise<void> {
  const sweep = setInterval(() => app.server.closeIdleConnections(), 50);
  const force =
    closeAfterMs === undefined
      ? null
      : setTimeout(() => {
          app.server.getConnections((_err, open) => {
            log.warn({ connections: open }, 'closing the connections still open at the shutdown deadline');
            app.server.closeAllConnections();
          });
        }, closeAfterMs);
  try {
    await app.close();
  } finally {
    clearInterval(sweep);
    if (force) clearTimeout(force);
  }
}
