import { isUtf8 } from 'node:buffer';
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import type { FastifyRequest } from 'fastify';
import { AppError } from '../../platform/errors';
import { parseJsonBody } from '../../platform/http/json-body';
import { firstInvalidUtf8 } from '../../platform/http/text-rule';
import type { App } from '../../platform/http/types';

const inflate = promisify(gunzip);

/**
 * Segment's limits (its HTTP API documentation): 32 KB per call and per event of a batch, 500 KB
 * per batch, measured on the JSON as sent, uncompressed. Past them Segment answers 400, and so does
 * this service, so that a client's error handling (never retry a 400) is right here too.
 */
export const TRACKING_LIMITS = {
  eventBytes: 32 * 1024,
  batchBytes: 500 * 1024,
  /** Messages in one batch: more than any 500 KB of real calls holds; bounds the work per request. */
  batchMessages: 2500,
} as const;

/**
 * The bytes a request may send before they are read (Fastify's body limit, answered 413): twice
 * the limit of what they may inflate to, so that any body whose content is within the limit gets
 * through to the check that answers Segment's 400.
 */
export const rawBodyLimit = (inflatedLimit: number): number => 2 * inflatedLimit;

const tooLarge = (bytes: number, limit: number, what: string) =>
  new AppError(
    'VALIDATION_ERROR',
    `${what} is over Segment's limit of ${limit / 1024} KB (${bytes > limit ? 'more than ' : ''}${limit} bytes); nothing was stored`,
    { details: [{ path: '/', message: `must be at most ${limit} bytes as JSON` }] },
  );

/**
 * The body parser of the tracking routes (registered in their own scope: the rest of the API keeps
 * the one JSON parser of platform/http/json-body.ts). The clients send JSON under several content
 * types (`application/json`; `text/plain` from browsers, which spares a preflight; none at all), so
 * every content type is read as JSON; `Content-Encoding: gzip` (the RudderStack Node client's
 * default) is inflated first, and inflation stops at the route's limit, so a small compressed body
 * can never become a big one in memory (zip bombs). What the JSON must be is platform's rule
 * (parseJsonBody: UTF-8, no forbidden keys, storable text).
 */
export function registerTrackingBodyParser(scope: App, limitOf: (req: FastifyRequest) => number): void {
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser('*', { parseAs: 'buffer' }, (req, body, done) => {
    readBody(req, body as Buffer, limitOf(req)).then(
      (value) => done(null, value),
      (err: unknown) => done(err as AppError, undefined),
    );
  });
}

async function readBody(req: FastifyRequest, raw: Buffer, limit: number): Promise<unknown> {
  const encoding = req.headers['content-encoding']?.trim().toLowerCase() ?? '';
  let buf = raw;
  if (encoding === 'gzip' || encoding === 'x-gzip') {
    try {
      buf = await inflate(raw, { maxOutputLength: limit + 1 });
    } catch (err) {
      if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') {
        throw tooLarge(limit + 1, limit, 'the inflated body');
      }
      throw new AppError('INVALID_JSON', 'request body is not valid gzip data');
    }
  } else if (encoding !== '' && encoding !== 'identity') {
    throw new AppError(
      'UNSUPPORTED_MEDIA_TYPE',
      `Content-Encoding ${encoding.slice(0, 50)} is not supported: send gzip or an uncompressed body`,
    );
  }
  if (buf.length > limit) throw tooLarge(buf.length, limit, 'the body');
  if (buf.length === 0) throw new AppError('INVALID_JSON', 'request body is empty');
  const charset = /;\s*charset\s*=\s*"?([^";\s]*)/i
    .exec(req.headers['content-type'] ?? '')?.[1]
    ?.toLowerCase();
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'request body must be UTF-8 (charset=utf-8, or no charset)');
  }
  if (!isUtf8(buf)) {
    throw new AppError(
      'INVALID_JSON',
      `request body is not valid UTF-8 (first bad byte at offset ${firstInvalidUtf8(buf)})`,
    );
  }
  return parseJsonBody(buf.toString('utf8'));
}
