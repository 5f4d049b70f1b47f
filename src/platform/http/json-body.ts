import sjson from 'secure-json-parse';
import { AppError } from '../errors';
import type { App } from './types';

/**
 * The only body parser: this API takes JSON and nothing else, so any other content type is 415
 * (Fastify would accept text/plain). Our own parser so that a `__proto__` or
 * `constructor.prototype` key, at any depth, is refused with a message saying so.
 */
export function registerJsonBodyParser(app: App): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    const text = body as string;
    if (text.length === 0) {
      // Some clients send `Content-Type: application/json` on every request, bodies or not; an empty
      // body is only an error where the route expects one.
      if (!req.routeOptions.schema?.body) return done(null, undefined);
      return done(new AppError('INVALID_JSON', 'request body is empty'), undefined);
    }
    try {
      done(null, sjson.parse(text, null, { protoAction: 'error', constructorAction: 'error' }));
    } catch (err) {
      const forbidden = err instanceof SyntaxError && /prototype/i.test(err.message);
      done(
        new AppError(
          'INVALID_JSON',
          forbidden
            ? 'request body contains a forbidden key (__proto__ or constructor)'
            : 'request body is not valid JSON',
        ),
        undefined,
      );
    }
  });
}
