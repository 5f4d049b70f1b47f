import { type Config, ConfigError } from './config';
import { createLogger } from './platform/logger';
import { createRuntime } from './runtime';

/**
 * `cdp start`: the service runs until SIGTERM or SIGINT, then drains within SHUTDOWN_TIMEOUT_MS.
 * A port already taken is the operator's setting to change (exit 2), like any other bad setting.
 */
export async function serve(config: Readonly<Config>): Promise<void> {
  const log = createLogger(config.logLevel);
  const rt = await createRuntime(config, log);
  if (rt.bootstrap && config.initialAdminKey !== null) {
    // The operator chose the key: it is theirs already, and a copy in the logs would only leak it.
    log.info(
      { workspace_id: rt.bootstrap.workspaceId },
      'created workspace "default" with the admin key from CDP_INITIAL_ADMIN_KEY',
    );
  } else if (rt.bootstrap) {
    // A generated key is printed exactly once, on the first start of an empty database.
    process.stdout.write(
      `\nCreated workspace "default" (${rt.bootstrap.workspaceId}).\n` +
        `Admin API key (shown only now, store it safely):\n\n  ${rt.bootstrap.apiKey.api_key}\n\n`,
    );
  }
  if (rt.app) {
    try {
      // PORT=0 binds a free port; the log line below says which.
      const address = await rt.app.listen({ port: config.port, host: config.host });
      log.info({ address, role: config.role, engine: rt.deps.db.engine }, 'cdp listening');
    } catch (err) {
      await rt.stop().catch(() => {});
      if ((err as { code?: string }).code === 'EADDRINUSE') {
        throw new ConfigError(`${config.host}:${config.port} is already in use; set PORT to another port`);
      }
      throw err;
    }
  } else {
    log.info({ role: config.role, engine: rt.deps.db.engine }, 'cdp worker running');
  }
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'draining');
    // HTTP gets the budget minus a reserve in which queued events are committed, the workers stop
    // and storage closes; connections still open then are closed (runtime.ts drainHttp).
    const reserve = Math.min(2000, Math.floor(config.shutdownTimeoutMs / 4));
    const timer = setTimeout(() => {
      // Every 202 was sent after its COMMIT, so once the event writer has drained nothing a client
      // was told is stored depends on this process: a worker or storage slow to close is no failure.
      if (rt.eventsDrained()) {
        log.warn('shutdown deadline reached with every accepted event stored; exiting');
        process.exit(0);
      }
      log.error('shutdown timed out before accepted events were stored');
      process.exit(1);
    }, config.shutdownTimeoutMs);
    timer.unref();
    rt.stop({ closeConnectionsAfterMs: config.shutdownTimeoutMs - reserve }).then(
      () => {
        // The event writer failed to commit what it had accepted (its error is logged above).
        if (!rt.eventsDrained()) {
          log.error('stopped before accepted events were stored');
          process.exit(1);
        }
        log.info('stopped');
        process.exit(0);
      },
      (err: unknown) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}
