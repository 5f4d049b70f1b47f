import pino, { type DestinationStream, type Logger, type LoggerOptions } from 'pino';

/**
 * One structured logger; API keys and operator tokens are redacted wherever they appear, and every
 * error logged under `err` goes through serializeError (no personal data from database errors).
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  const options: LoggerOptions = {
    level,
    serializers: { err: serializeError },
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
  };
  return destination ? pino(options, destination) : pino(options);
}

export interface SerializedError {
  type: string;
  message: string;
  stack?: string;
  code?: string;
  [field: string]: unknown;
}

/**
 * Database error fields that name things (SQLSTATE, severity, server routine, schema objects) and
 * never carry row data. Everything else a driver attaches is dropped: `detail` ("Key (email)=(…)
 * already exists", "Failing row contains (…)"), `where` (PL/pgSQL context, "JSON data, line 1: …"),
 * `hint`, `internalQuery`, and PGlite's `query` and `params` (the statement's parameter values).
 */
const DB_FIELDS = ['severity', 'routine', 'schema', 'table', 'column', 'dataType', 'constraint'] as const;
/** Fields of Node and Fastify errors that describe the failure, not the data. */
const OTHER_FIELDS = ['errno', 'syscall', 'statusCode'] as const;
/** Words after which PostgreSQL quotes a name (`constraint "t_email_key"`), not a value. */
const NAME_WORDS = new Set([
  'column',
  'relation',
  'constraint',
  'index',
  'table',
  'schema',
  'type',
  'function',
  'sequence',
  'trigger',
  'view',
  'database',
  'role',
  'extension',
  'encoding',
  'collation',
  'tablespace',
  'channel',
  'savepoint',
  'cursor',
]);

/** A PostgreSQL error from `pg` or PGlite (also as rebuilt from the PGlite thread). */
function isDatabaseError(e: Record<string, unknown>): boolean {
  return (
    typeof e.code === 'string' &&
    /^[0-9A-Z]{5}$/.test(e.code) &&
    (typeof e.severity === 'string' || typeof e.routine === 'string' || e.name === 'DatabaseError')
  );
}

/**
 * A PostgreSQL message without the values it may quote: `invalid input syntax for type uuid:
 * "ada@example.com"`, `value "99999999999" is out of range`. Quoted names of schema objects stay.
 */
export function redactDatabaseMessage(message: string): string {
  return message
    .replace(/^(invalid byte sequence for encoding "[^"]*"):.*$/s, '$1: …')
    .replace(/(\w+)?(\s*)"(?:[^"]|"")*"/g, (quoted, word: string | undefined, space: string) =>
      word !== undefined && NAME_WORDS.has(word.toLowerCase()) ? quoted : `${word ?? ''}${space}"…"`,
    );
}

/**
 * The pino `err` serializer: type, message, stack, code and a few descriptive fields, never the
 * enumerable properties an error happens to carry (pino's default logs them all). Database errors
 * keep only the fields that name things, with values removed from their message.
 */
export function serializeError(err: unknown, depth = 0): unknown {
  if (typeof err !== 'object' || err === null) return err;
  const e = err as Record<string, unknown>;
  const db = isDatabaseError(e);
  const rawMessage = typeof e.message === 'string' ? e.message : String(err);
  const message = db ? redactDatabaseMessage(rawMessage) : rawMessage;
  const out: SerializedError = {
    // pg names its errors `error` and minified PGlite classes have one-letter names.
    type: db ? 'DatabaseError' : ((err as object).constructor?.name ?? String(e.name ?? 'Error')),
    message,
  };
  if (typeof e.stack === 'string') out.stack = db ? e.stack.replace(rawMessage, message) : e.stack;
  if (typeof e.code === 'string' || typeof e.code === 'number') out.code = String(e.code);
  for (const f of db ? DB_FIELDS : OTHER_FIELDS) {
    if (typeof e[f] === 'string' || typeof e[f] === 'number') out[f] = e[f];
  }
  if (depth < 3) {
    if (e.cause !== undefined) out.cause = serializeError(e.cause, depth + 1);
    if (Array.isArray(e.errors)) out.errors = e.errors.slice(0, 10).map((x) => serializeError(x, depth + 1));
  }
  return out;
}

/**
 * One line naming an error without the data a database error may quote (`DatabaseError: invalid
 * input syntax for type uuid: "…"`), for logs and records that keep errors as text.
 */
export function describeError(err: unknown): string {
  const s = serializeError(err);
  if (typeof s !== 'object' || s === null) return String(s);
  const { type, message } = s as SerializedError;
  return `${type}: ${message}`;
}
