import type { FastifyRequest } from 'fastify';
import { AppError } from '../errors';
import type { App } from './types';

/** Answered over plain HTTP even behind a proxy: load balancers probe them directly. */
const PROBES = new Set(['/health', '/ready']);

/**
 * Behind a TLS-terminating proxy (TRUST_PROXY), a request that did not come through it over HTTPS
 * (no trusted `X-Forwarded-Proto: https`) is refused, so keys never travel in clear text. The CLI's
 * local routes are let through: the CLI calls this machine's own service directly, past the proxy.
 */
export function createHttpsRequiredHook() {
  return async function requireHttps(req: FastifyRequest): Promise<void> {
    if (req.routeOptions.config?.auth === 'local') return;
    if (req.protocol !== 'https' && !PROBES.has(req.url.split('?')[0] ?? '')) {
      throw new AppError('HTTPS_REQUIRED', 'use HTTPS');
    }
  };
}

/**
 * While the server drains (SIGTERM), requests that still arrive on open keep-alive connections get
 * 503 UNAVAILABLE in the envelope with `Connection: close`, so the client retries elsewhere.
 * (Fastify's own `return503OnClosing` answers in its own body shape; app.ts turns it off.)
 */
export function installDrainGuard(app: App): void {
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onRequest', async () => {
    if (closing) {
      throw new AppError('UNAVAILABLE', 'the service is shutting down; retry', {
        headers: { 'retry-after': '1', connection: 'close' },
      });
    }
  });
}
