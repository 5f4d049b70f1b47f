import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Config, ConfigError } from './config';
import { DEFAULT_CONSOLE_DIR } from './modules/console/site';
import { assertDataDirFree, connectableUrl, heldLock } from './platform/db/data-dir-lock';
import { type FrontDoor, openFrontDoor } from './platform/http/front-door';
import { createLogger } from './platform/logger';
import type { Runtime } from './runtime';

/**
 * `cdp start`: the service runs until SIGTERM or SIGINT, then drains within SHUTDOWN_TIMEOUT_MS.
 * A port already taken is the operator's setting to change (exit 2), like any other bad setting.
 *
 * The order is what keeps a start from ever looking dead: the port is bound first and answers
 * /health at once and /ready with what the start is doing (platform/http/front-door.ts); then
 * storage opens (creating or recovering an embedded database, each step logged), migrations run,
 * the app takes the port over (`cdp ready`), and only then do the workers start, so nothing they
 * do (job registration, maintenance, a backlog) can delay serving.
 */
export async function serve(config: Readonly<Config>): Promise<void> {
  const log = createLogger(config.logLevel);
  const t0 = performance.now();
  const engine = config.databaseUrl ? 'postgres' : 'pglite';

  let door: FrontDoor | null = null;
  let rt: Runtime | null = null;
  let stopping = false;
  /** 1 when the stop was caused by a failure rather than asked for. */
  let exitCode = 0;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'draining');
    const timer = setTimeout(() => {
      // Every 202 was sent after its COMMIT, so once the event writer has drained nothing a client
      // was told is stored depends on this process: a worker or storage slow to close is no failure.
      // A start stopped before it served has accepted nothing at all.
      if (!rt || rt.eventsDrained()) {
        log.warn('shutdown deadline reached with every accepted event stored; exiting');
        process.exit(exitCode);
      }
      log.error('shutdown timed out before accepted events were stored');
      process.exit(1);
    }, config.shutdownTimeoutMs);
    timer.unref();
    // Still starting: nothing was accepted yet, and whatever the start was writing is transactional
    // (a migration, the bootstrap) or recovered at the next start, so stop at once.
    if (!rt) {
      log.info('stopped while starting');
      void (door?.close() ?? Promise.resolve()).finally(() => process.exit(exitCode));
      return;
    }
    stopRuntime(rt);
  };
  const stopRuntime = (r: Runtime) => {
    // HTTP gets the budget minus a reserve in which queued events are committed, the workers stop
    // and storage closes; connections still open then are closed (runtime.ts drainHttp).
    const reserve = Math.min(2000, Math.floor(config.shutdownTimeoutMs / 4));
    r.stop({ closeConnectionsAfterMs: config.shutdownTimeoutMs - reserve }).then(
      () => {
        // The event writer failed to commit what it had accepted (its error is logged above).
        if (!r.eventsDrained()) {
          log.error('stopped before accepted events were stored');
          process.exit(1);
        }
        log.info('stopped');
        process.exit(exitCode);
      },
      (err: unknown) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  // Listened for before anything else: a signal that came once the port accepts connections but
  // before a listener existed would kill the process with the signal instead of stopping it.
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));

  // A second service on the same embedded database is refused before it binds a port of its own.
  if (!config.databaseUrl && config.dataDir !== ':memory:') assertDataDirFree(config.dataDir);
  if (config.role !== 'worker') {
    try {
      door = await openFrontDoor({
        host: config.host,
        port: config.port,
        https:
          config.tlsCertFile && config.tlsKeyFile
            ? { cert: readFileSync(config.tlsCertFile), key: readFileSync(config.tlsKeyFile) }
            : null,
        bodyTimeoutMs: config.bodyTimeoutMs,
      });
    } catch (err) {
      if ((err as { code?: string }).code === 'EADDRINUSE') {
        throw new ConfigError(`${config.host}:${config.port} is already in use; set PORT to another port`);
      }
      throw err;
    }
    // PORT=0 binds a free port; this line says which.
    log.info({ address: door.url, role: config.role, engine }, 'cdp listening');
  }

  // The service's modules load after the port is bound: transpiling them takes a while too.
  const { createRuntime } = await import('./runtime');
  try {
    rt = await createRuntime(config, log, {
      server: door?.server ?? null,
      ...(door ? { onPhase: door.setPhase } : {}),
      workers: 'later',
    });
  } catch (err) {
    await door?.close().catch(() => {});
    if (stopping) {
      // Stopped while starting (Ctrl-C reaches a first start's initdb child too): nothing was
      // accepted, and an interrupted creation is done again by the next start.
      log.info({ err: (err as Error).message }, 'stopped while starting');
      process.exit(exitCode);
    }
    throw err;
  }
  if (stopping) {
    stopRuntime(rt);
    return;
  }

  // Where the console is and what to sign in with: the first thing a newcomer needs (README).
  const consoleLine = door ? consoleReport(config, `${connectableUrl(door.url)}/`) : null;
  if (rt.bootstrap && config.initialAdminKey !== null) {
    // The operator chose the key: it is theirs already, and a copy in the logs would only leak it.
    log.info(
      { workspace_id: rt.bootstrap.workspaceId },
      'created workspace "default" with the admin key from CDP_INITIAL_ADMIN_KEY',
    );
    if (consoleLine)
      process.stdout.write(`\n${consoleLine} Sign in with the key in CDP_INITIAL_ADMIN_KEY.\n\n`);
  } else if (rt.bootstrap) {
    // A generated key is printed exactly once, on the first start of an empty database.
    process.stdout.write(
      `\nCreated workspace "default" (${rt.bootstrap.workspaceId}).\n` +
        `Admin API key (shown only now, store it safely):\n\n  ${rt.bootstrap.apiKey.api_key}\n\n` +
        (consoleLine ? `${consoleLine} Sign in with this key.\n` : '') +
        (door ? `The API is at ${door.url} (reference: ${door.url}/docs).\n\n` : ''),
    );
  } else if (consoleLine) {
    process.stdout.write(
      `\n${consoleLine} Sign in with an API key (viewer, editor or admin); the admin key of workspace "default" was printed at the first start.\n\n`,
    );
  }
  // Said before the first request can be served, so a client that saw /ready answer 200 finds it.
  if (door && rt.app) {
    const app = rt.app;
    log.info(
      { address: door.url, role: config.role, engine, ms: Math.round(performance.now() - t0) },
      'cdp ready',
    );
    door.open((req, res) => app.routing(req, res));
    // CLI commands on the same embedded database find the service here (the lock file).
    heldLock(config.dataDir)?.advertise(connectableUrl(door.url));
  }
  const started = performance.now();
  await rt.startWorkers().catch((err: unknown) => {
    // Workers that cannot start leave a service that would accept events it never processes.
    log.error({ err }, 'the workers failed to start');
    exitCode = 1;
    shutdown('workers failed');
  });
  if (config.role === 'worker' && !stopping) {
    log.info({ role: config.role, engine, ms: Math.round(performance.now() - t0) }, 'cdp worker running');
  } else if (!stopping) {
    log.debug({ ms: Math.round(performance.now() - started) }, 'workers started');
  }
}

/** "Console: <url>", or why there is none yet (the web app is built by `npm install`). */
function consoleReport(config: Readonly<Config>, url: string): string {
  const dir = config.consoleDir ?? DEFAULT_CONSOLE_DIR;
  return existsSync(join(dir, 'index.html'))
    ? `Console: ${url}`
    : `Console: ${url} (not built yet: run npm install to build it; the API works meanwhile).`;
}
