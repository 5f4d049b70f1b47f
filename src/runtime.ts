import { readFileSync } from 'node:fs';
import type http from 'node:http';
import type https from 'node:https';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { buildApp } from './app';
import { type Config, ConfigError } from './config';
import {
  browserOriginSource,
  type CreatedApiKey,
  createKeyResolver,
  type RevocationBroadcast,
  SECRET_SHAPE,
} from './modules/api-keys';
import { createAuditSink } from './modules/audit';
import { createSessionStore } from './modules/console';
import { createEventWriter } from './modules/ingest/ingest.service';
import { createSettingsStore } from './modules/workspaces';
import { bootstrapDefaultWorkspace, loadCursorSecret } from './modules/workspaces/workspaces.service';
import { PERSONAL_DATA } from './personal-data';
import { createCursorCodec } from './platform/cursor';
import { type Db, openDb } from './platform/db';
import { migrate } from './platform/db/migrate';
import { createOriginIndex } from './platform/http/cors';
import type { StartPhase } from './platform/http/front-door';
import { keyResolvers } from './platform/http/key-credentials';
import { createRateLimits } from './platform/http/rate-limit';
import { sessionCookie } from './platform/http/session-cookie';
import type { App, AppDeps } from './platform/http/types';
import { createStartReport } from './start-report';
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
   * Starts the background workers (ROLE=worker|all) if they are not running yet. createRuntime
   * starts them itself unless told `workers: 'later'` (`cdp start` serves first).
   */
  startWorkers(): Promise<void>;
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
  /** A server already listening, for the app to adopt (platform/http/front-door.ts). */
  server?: http.Server | https.Server | null;
  /** Hears each step of the start (what /ready says meanwhile). */
  onPhase?: (phase: StartPhase, text: string) => void;
  /** 'later': the workers wait for startWorkers(), so that nothing they do delays serving. */
  workers?: 'now' | 'later';
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
  const report = createStartReport(log, opts.onPhase);
  const db = opts.db ?? (await openDb(config, { onProgress: report.open }));
  const closers: Array<() => Promise<void>> = [];
  try {
    const applied = await migrate(db, undefined, { onProgress: report.migrate });
    if (applied.length > 0) log.info({ applied }, 'migrations applied');
    report.loading();

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

    // The origins preflights are answered for: loaded whole once, then kept up to date by changes.
    const origins = createOriginIndex(browserOriginSource(db, { watching: () => keys.stats().trusted }), {
      log,
    });
    if (config.role !== 'worker') {
      await origins.start();
      closers.push(() => origins.stop());
    }

    const events = createEventWriter(db, log);
    const sessions = createSessionStore(db, keys);
    const deps: AppDeps = {
      config,
      db,
      log,
      cursors,
      keys,
      settings,
      // X-API-Key, then the Segment ways (Basic auth, body writeKey) on ingest routes, then the
      // console's session cookie (ignored when the request carries a key).
      principals: [...keyResolvers(keys), sessionCookie(sessions)],
      sessions,
      audit: createAuditSink(db),
      limits: createRateLimits(redis, { keyPrefix: `cdp:${namespace}:rl` }),
      origins,
      redis,
      events,
      personalData: PERSONAL_DATA,
    };

    let app: App | null = null;
    if (config.role !== 'worker') {
      const https =
        config.tlsCertFile && config.tlsKeyFile
          ? { cert: readFileSync(config.tlsCertFile), key: readFileSync(config.tlsKeyFile) }
          : null;
      app = await buildApp(deps, { https, server: opts.server ?? null });
      await app.ready();
    }
    let stopWorkers: (() => Promise<void>) | null = null;
    let workersStarting: Promise<void> | null = null;
    const startWorkersOnce = () => {
      workersStarting ??=
        config.role === 'api'
          ? Promise.resolve()
          : startWorkers(deps).then((stop) => {
              stopWorkers = stop;
            });
      return workersStarting;
    };
    // A stop while the workers are still starting waits for them, then stops them.
    closers.push(async () => {
      await workersStarting?.catch(() => {});
      await stopWorkers?.();
    });
    if (opts.workers !== 'later') await startWorkersOnce();
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
      startWorkers: startWorkersOnce,
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
  // Fastify closes only a server it listened on itself; an adopted one (front-door.ts) is closed
  // here, and the drain ends when its last connection has.
  const serverClosed = app.server.listening
    ? new Promise<void>((resolve) => app.server.close(() => resolve()))
    : null;
  try {
    await app.close();
    await serverClosed;
  } finally {
    clearInterval(sweep);
    if (force) clearTimeout(force);
  }
}
