import pino, { type Logger } from 'pino';

/** One structured logger; API keys and operator tokens are redacted wherever they appear. */
export function createLogger(level: string): Logger {
  return pino({
    level,
    redact: {
      paths: [
        'req.headers["x-api-key"]',
        'req.headers.authorization',
        'api_key',
        '*.api_key',
        'initialAdminKey',
      ],
      censor: '[redacted]',
    },
  });
}
