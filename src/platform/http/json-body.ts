import { isUtf8 } from 'node:buffer';
import sjson from 'secure-json-parse';
import { AppError } from '../errors';
import { findUnstorable, firstInvalidUtf8, unstorableError } from './text-rule';
import type { App } from './types';

/** `charset` parameter of a Content-Type, lower-cased; null when there is none. */
const charsetOf = (contentType: string | undefined): string | null => {
  const m = /;\s*charset\s*=\s*"?([^";\s]*)/i.exec(contentType ?? '');
  return m ? m[1]!.toLowerCase() : null;
};

/**
 * The only body parser: this API takes JSON and nothing else, so any other content type is 415
 * (Fastify would accept text/plain). Our own parser so that a `__proto__` or
 * `constructor.prototype` key, at any depth, is refused with a message saying so.
 *
 * It is also the one place where every body meets the text rule (text-rule.ts): the body must be
 * UTF-8 (a `charset` other than UTF-8 is 415, invalid bytes are 400), a `Content-Encoding` is 415
 * (no route takes compressed bodies; a gzip body must not be read as if it were plain), and the
 * parsed value may hold no NUL, unpaired surrogate, non-finite number or nesting deeper than 64.
 */
export function registerJsonBodyParser(app: App): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (req, body, done) => {
    const buf = body as Buffer;
    if (buf.length === 0) {
      // Some clients send `Content-Type: application/json` on every request, bodies or not; an empty
      // body is only an error where the route expects one.
      if (!req.routeOptions.schema?.body) return done(null, undefined);
      return done(new AppError('INVALID_JSON', 'request body is empty'), undefined);
    }
    const encoding = req.headers['content-encoding']?.trim().toLowerCase();
    if (encoding && encoding !== 'identity') {
      return done(
        new AppError(
          'UNSUPPORTED_MEDIA_TYPE',
          `Content-Encoding ${encoding.slice(0, 50)} is not supported: send the body uncompressed`,
        ),
        undefined,
      );
    }
    const charset = charsetOf(req.headers['content-type']);
    if (charset !== null && charset !== 'utf-8' && charset !== 'utf8') {
      return done(
        new AppError('UNSUPPORTED_MEDIA_TYPE', 'request body must be UTF-8 (charset=utf-8, or no charset)'),
        undefined,
      );
    }
    if (!isUtf8(buf)) {
      return done(
        new AppError(
          'INVALID_JSON',
          `request body is not valid UTF-8 (first bad byte at offset ${firstInvalidUtf8(buf)})`,
        ),
        undefined,
      );
    }
    const text = buf.toString('utf8');
    let value: unknown;
    try {
      value = sjson.parse(text, null, { protoAction: 'error', constructorAction: 'error' });
    } catch (err) {
      const forbidden = err instanceof SyntaxError && /prototype/i.test(err.message);
      return done(
        new AppError(
          'INVALID_JSON',
          forbidden
            ? 'request body contains a forbidden key (__proto__ or constructor)'
            : 'request body is not valid JSON',
        ),
        undefined,
      );
    }
    // NUL and unpaired surrogates can only come from `\u` escapes (raw control characters are not
    // JSON, and valid UTF-8 holds no surrogates), so bodies without one skip the string checks.
    const problems = findUnstorable(value, text.includes('\\u'));
    if (problems.length > 0) return done(unstorableError('body', problems), undefined);
    done(null, value);
  });
}
