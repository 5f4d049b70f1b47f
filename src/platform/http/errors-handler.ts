import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { isStorageUnavailable } from '../db/errors';
import { AppError, type ErrorCode, toEnvelope } from '../errors';
import { describeError } from '../logger';
import { toAppError } from './error-mapping';
import { newRequestId, REQUEST_ID_HEADER } from './request-id';
import type { RouteRegistry } from './route-registry';

/**
 * The client went away while its request body was still arriving: Node fails the body stream with
 * `aborted` (ECONNRESET). Nothing is wrong with the service and nobody reads the answer.
 */
export function isClientAbort(err: unknown, req: FastifyRequest): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  if (e?.code === 'ECONNRESET' && e.message === 'aborted') return true;
  // A body cut short by the client's FIN arrives as a length mismatch on an aborted request.
  return e?.code === 'FST_ERR_CTP_INVALID_CONTENT_LENGTH' && req.raw.aborted === true;
}

export function errorHandler(err: unknown, req: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (isClientAbort(err, req)) {
    req.log.info({ method: req.method, path: echoPath(req.url) }, 'connection closed mid-request');
    // The socket is gone; answering only completes Fastify's bookkeeping for this request.
    return reply.code(400).header('connection', 'close').send();
  }
  const appErr = toAppError(err);
  const where = { method: req.method, path: echoPath(req.url) };
  if (appErr.code === 'UNAVAILABLE') {
    // Expected while storage is down or the process drains, once per request: one line, no stack
    // (an outage would otherwise log hundreds of identical stacks).
    req.log.warn({ ...where, cause: describeError(appErr.cause ?? err) }, 'request answered 503');
  } else if (appErr.status >= 500) req.log.error({ err, ...where }, 'request failed');
  else req.log.debug({ code: appErr.code }, 'request refused');
  if (appErr.headers) void reply.headers(appErr.headers);
  // Errors raised before any hook ran (an undecodable URL) get the header here.
  void reply.header(REQUEST_ID_HEADER, req.id);
  return reply.code(appErr.status).type('application/json; charset=utf-8').send(toEnvelope(appErr, req.id));
}

// The mapping and the classifier live apart; re-exported for the handler's callers.
export { toAppError, validationDetails } from './error-mapping';
export { isStorageUnavailable };

const MAX_ECHOED_PATH = 200;
/** The path of a request, for answers and logs: never the query string (it can hold e-mail addresses). */
const echoPath = (url: string): string => {
  const path = url.split('?')[0] ?? '';
  return path.length > MAX_ECHOED_PATH ? `${path.slice(0, MAX_ECHOED_PATH)}…` : path;
};

/**
 * No route for this method and path. A path that exists under other methods is 405 with `Allow`
 * (clearer for a caller than a 404 on a path the documentation lists); anything else is 404.
 */
export function createNotFoundHandler(registry: Pick<RouteRegistry, 'allowedMethods'>) {
  return function notFound(req: FastifyRequest): never {
    const path = echoPath(req.url);
    const allowed = registry.allowedMethods(req.url.split('?')[0] ?? '');
    if (allowed.length > 0) {
      throw new AppError(
        'METHOD_NOT_ALLOWED',
        `${req.method} is not supported on ${path}; use ${allowed.join(', ')}`,
        {
          headers: { allow: allowed.join(', ') },
        },
      );
    }
    throw new AppError('NOT_FOUND', `no route ${req.method} ${path}`);
  };
}

/**
 * Fastify's `frameworkErrors`: errors raised before routing (undecodable URL, over-long path
 * parameter) would otherwise get Fastify's own body; they get the envelope like everything else.
 */
export function frameworkErrorHandler(err: FastifyError, req: FastifyRequest, reply: FastifyReply): void {
  void errorHandler(err, req, reply);
}

/** Node's parser errors the envelope names; any other is a malformed request (400). */
const CLIENT_ERRORS = new Map<string, { code: ErrorCode; message: string }>([
  ['ERR_HTTP_REQUEST_TIMEOUT', { code: 'REQUEST_TIMEOUT', message: 'the request took too long to arrive' }],
  ['HPE_HEADER_OVERFLOW', { code: 'HEADERS_TOO_LARGE', message: 'request headers are too large' }],
]);
const MALFORMED: { code: ErrorCode; message: string } = {
  code: 'VALIDATION_ERROR',
  message: 'malformed HTTP request',
};

/**
 * Node's `clientError`: the bytes were not a parseable HTTP request, so there is no request object
 * and no route; the envelope is written straight onto the socket (Fastify's default writes its own
 * body shape).
 */
export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const known = CLIENT_ERRORS.get(err.code ?? '') ?? MALFORMED;
  const appErr = new AppError(known.code, known.message);
  const status = appErr.status;
  // No request was parsed, so none was named: the answer gets an id of its own.
  const requestId = newRequestId();
  const body = JSON.stringify(toEnvelope(appErr, requestId));
  // A response already under way on this socket (Node's request timeout can fire while a body is
  // still arriving for a request that was answered early) must not get a second one in its middle.
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (socket.writable && !inFlight?.headersSent) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `X-Request-Id: ${requestId}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `Connection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(err);
}
