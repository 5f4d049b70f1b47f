import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { isStorageUnavailable } from '../db/errors';
import { AppError, type ErrorCode, type ErrorDetail, toEnvelope } from '../errors';
import { describeError } from '../logger';
import type { RouteRegistry } from './route-registry';

interface AjvLikeError {
  instancePath?: string;
  message?: string;
  keyword?: string;
  params?: Record<string, unknown>;
}

const escapePointer = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

/** Ajv errors → JSON-pointer details, naming the missing or unexpected property itself. */
export function validationDetails(errors: readonly AjvLikeError[]): ErrorDetail[] {
  const seen = new Set<string>();
  const details: ErrorDetail[] = [];
  for (const e of errors) {
    let path = e.instancePath ?? '';
    let message = e.message ?? 'is invalid';
    const p = e.params ?? {};
    if (e.keyword === 'required' && typeof p.missingProperty === 'string') {
      path = `${path}/${escapePointer(p.missingProperty)}`;
      message = 'is required';
    } else if (e.keyword === 'additionalProperties' && typeof p.additionalProperty === 'string') {
      path = `${path}/${escapePointer(p.additionalProperty)}`;
      message = 'is not a known field';
    } else if (e.keyword === 'enum' && Array.isArray(p.allowedValues)) {
      message = `must be one of: ${p.allowedValues.join(', ')}`;
    }
    const key = `${path}|${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    details.push({ path: path || '/', message });
  }
  return details.slice(0, 100);
}

const PART_NAMES: Record<string, string> = {
  body: 'body',
  querystring: 'query',
  params: 'path',
  headers: 'header',
};

/** Turns anything thrown while handling a request into an AppError the client may see. */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  const fe = err as FastifyError & { validationContext?: string };
  if (fe && Array.isArray(fe.validation)) {
    const part = PART_NAMES[fe.validationContext ?? 'body'] ?? 'request';
    const details = validationDetails(fe.validation as AjvLikeError[]);
    const first = details[0];
    const message = first ? `${part} ${first.path} ${first.message}` : `${part} is invalid`;
    return new AppError('VALIDATION_ERROR', message, { details });
  }
  switch (fe?.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return fe.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE'
        ? new AppError('UNSUPPORTED_MEDIA_TYPE', 'request body must be application/json')
        : new AppError('VALIDATION_ERROR', 'Content-Length does not match the body');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError('PAYLOAD_TOO_LARGE', 'request body is larger than this endpoint accepts');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new AppError('INVALID_JSON', 'request body is empty but Content-Type is application/json');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new AppError('INVALID_JSON', 'request body is not valid JSON');
  }
  if (err instanceof SyntaxError) {
    // secure-json-parse refuses __proto__ / constructor.prototype keys with a SyntaxError.
    return /prototype/i.test(err.message)
      ? new AppError('INVALID_JSON', 'request body contains a forbidden key (__proto__ or constructor)')
      : new AppError('INVALID_JSON', 'request body is not valid JSON');
  }
  if (isStorageUnavailable(err)) {
    return new AppError('UNAVAILABLE', 'storage is not answering; retry shortly', {
      cause: err,
      headers: { 'retry-after': '5' },
    });
  }
  switch (fe?.code) {
    case 'FST_ERR_BAD_URL':
      return new AppError('VALIDATION_ERROR', 'the request path is not a valid URL');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return new AppError('VALIDATION_ERROR', 'a path parameter is too long');
  }
  const status = typeof fe?.statusCode === 'number' ? fe.statusCode : 500;
  if (status === 404) return new AppError('NOT_FOUND', 'not found');
  if (status === 413) return new AppError('PAYLOAD_TOO_LARGE', 'request body is too large');
  if (status === 415) return new AppError('UNSUPPORTED_MEDIA_TYPE', 'request body must be application/json');
  if (status >= 400 && status < 500) return new AppError('VALIDATION_ERROR', 'bad request');
  if (status === 503)
    return new AppError('UNAVAILABLE', 'service unavailable', { headers: { 'retry-after': '5' } });
  return new AppError('INTERNAL_ERROR', 'internal error', { cause: err });
}

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
  return reply.code(appErr.status).type('application/json; charset=utf-8').send(toEnvelope(appErr));
}

// The classifier lives with the storage adapters; re-exported for the handler's callers.
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

const CLIENT_ERRORS: Record<string, { status: number; code: ErrorCode; message: string }> = {
  ERR_HTTP_REQUEST_TIMEOUT: {
    status: 408,
    code: 'REQUEST_TIMEOUT',
    message: 'the request took too long to arrive',
  },
  HPE_HEADER_OVERFLOW: { status: 431, code: 'HEADERS_TOO_LARGE', message: 'request headers are too large' },
};

/**
 * Node's `clientError`: the bytes were not a parseable HTTP request, so there is no request object
 * and no route; the envelope is written straight onto the socket (Fastify's default writes its own
 * body shape).
 */
export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const known = CLIENT_ERRORS[err.code ?? ''];
  const status = known?.status ?? 400;
  const body = JSON.stringify({
    status: 'error',
    error_code: known?.code ?? 'VALIDATION_ERROR',
    message: known?.message ?? 'malformed HTTP request',
    timestamp: new Date().toISOString(),
  });
  // A response already under way on this socket (Node's request timeout can fire while a body is
  // still arriving for a request that was answered early) must not get a second one in its middle.
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (socket.writable && !inFlight?.headersSent) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(err);
}
