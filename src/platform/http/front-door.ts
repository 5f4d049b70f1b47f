import http from 'node:http';
import https from 'node:https';
import { AppError, toEnvelope } from '../errors';
import { clientErrorHandler } from './errors-handler';
import { newRequestId, REQUEST_ID_HEADER } from './request-id';

/**
 * The service's port, bound before anything else happens at start: opening storage (which on an
 * embedded database may mean creating it, or replaying its log after a crash), migrations, loading
 * caches and starting the workers all come after, so none of them can keep the port closed. Until
 * the app is handed the server, it answers:
 *
 * - `GET /health`: `200 {"status":"ok"}`: the process is alive (a supervisor must not restart it);
 * - `GET /ready`: `503 UNAVAILABLE` saying what the start is doing (`details[0]` is the phase);
 * - anything else: `503 UNAVAILABLE`, `Retry-After: 1`, in the error envelope.
 *
 * Then every request goes to the app (Fastify adopts this same server), so no connection is ever
 * refused between the two.
 */

/** Fastify's default, kept for the adopted server: idle keep-alive connections close after 72 s. */
const KEEP_ALIVE_TIMEOUT_MS = 72_000;

/**
 * Node's own slow-client limits. A request (headers and body) must arrive whole within
 * BODY_TIMEOUT_MS (Fastify's default, 0, lets a body trickle in forever); Node then raises
 * ERR_HTTP_REQUEST_TIMEOUT and clientErrorHandler answers 408 in the envelope and closes the
 * connection. Node checks its connections on an interval (30 s by default, too coarse for a
 * deadline), so the check runs at a tenth of the timeout, at most once a second.
 */
export function slowClientLimits(bodyTimeoutMs: number) {
  return {
    headersTimeout: Math.min(60_000, bodyTimeoutMs),
    connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(bodyTimeoutMs / 10))),
  };
}

/** The steps of a start, as /ready names them in `details[0].message`. */
export type StartPhase = 'opening' | 'creating' | 'recovering' | 'migrating' | 'loading';

export interface FrontDoorOptions {
  host: string;
  port: number;
  https: { cert: Buffer; key: Buffer } | null;
  bodyTimeoutMs: number;
}

export interface FrontDoor {
  /** The bound server; Fastify adopts it (buildApp's `server`). */
  readonly server: http.Server | https.Server;
  /** `http(s)://host:port` as bound (PORT=0 picks a free port). */
  readonly url: string;
  /** What /ready says from now on, e.g. ('migrating', 'migrating the database: 3 of 24'). */
  setPhase(phase: StartPhase, text: string): void;
  /** Every request from now on goes to `handler` (the app's); the start-up answers stop. */
  open(handler: http.RequestListener): void;
  /** Stops accepting and closes the connections (a start that failed or was stopped). */
  close(): Promise<void>;
}

const send = (
  res: http.ServerResponse,
  requestId: string,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
) => {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    [REQUEST_ID_HEADER]: requestId,
    ...headers,
  });
  res.end(text);
};

/** Binds the port; EADDRINUSE and the like reject, with nothing left listening. */
export async function openFrontDoor(opts: FrontDoorOptions): Promise<FrontDoor> {
  let phase: StartPhase = 'opening';
  let text = 'opening storage';
  let app: http.RequestListener | null = null;

  const starting: http.RequestListener = (req, res) => {
    const path = (req.url ?? '').split('?')[0];
    // Before the app serves, no proxy is trusted yet: every answer gets a fresh id.
    const requestId = newRequestId();
    if (req.method === 'GET' && path === '/health') return send(res, requestId, 200, { status: 'ok' });
    const err = new AppError(
      'UNAVAILABLE',
      path === '/ready' ? `starting: ${text}` : `the service is starting (${text}); retry`,
      { details: [{ path: 'phase', message: phase }] },
    );
    // The body of a refused request is never read: the connection goes with the answer.
    send(res, requestId, err.status, toEnvelope(err, requestId), { 'retry-after': '1', connection: 'close' });
  };

  const limits = slowClientLimits(opts.bodyTimeoutMs);
  const server = opts.https
    ? https.createServer({ ...opts.https, ...limits })
    : http.createServer({ ...limits });
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  server.requestTimeout = opts.bodyTimeoutMs;
  server.on('request', (req, res) => (app ?? starting)(req, res));
  // Fastify adds its own (the same handler) when it adopts the server; this one covers the start.
  server.on('clientError', clientErrorHandler);

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port: opts.port, host: opts.host }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as { port: number };
  const host = opts.host.includes(':') ? `[${opts.host}]` : opts.host;

  return {
    server,
    url: `${opts.https ? 'https' : 'http'}://${host}:${port}`,
    setPhase(p, t) {
      phase = p;
      text = t;
    },
    open(handler) {
      server.off('clientError', clientErrorHandler);
      app = handler;
    },
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
