import { isIP } from 'node:net';
import { type Static, Type } from 'typebox';
import { Value } from 'typebox/value';

/**
 * Every setting the service reads, parsed once from the environment and frozen. Nothing else in the
 * code reads process.env, so this schema is the complete list (and docs/configuration.md mirrors it).
 */
const ConfigSchema = Type.Object({
  port: Type.Integer({ minimum: 0, maximum: 65535 }),
  host: Type.String({ minLength: 1 }),
  role: Type.Union([Type.Literal('api'), Type.Literal('worker'), Type.Literal('all')]),
  dataDir: Type.String({ minLength: 1 }),
  databaseUrl: Type.Union([Type.String({ pattern: '^postgres(ql)?://' }), Type.Null()]),
  databaseSchema: Type.Union([Type.String({ pattern: '^[a-z_][a-z0-9_]{0,62}$' }), Type.Null()]),
  redisUrl: Type.Union([Type.String({ pattern: '^rediss?://' }), Type.Null()]),
  initialAdminKey: Type.Union([Type.String({ minLength: 32, maxLength: 200 }), Type.Null()]),
  operatorToken: Type.Union([Type.String({ minLength: 16, maxLength: 500 }), Type.Null()]),
  allowPrivateWebhooks: Type.Boolean(),
  pgliteInProcess: Type.Boolean(),
  /**
   * A dump of a migrated embedded database that a new one (DATA_DIR=:memory:, or a directory with no
   * database yet) starts from instead of initdb and the migrations: how the test suite starts its
   * services in a fraction of the time (docs/testing.md). Null: initdb.
   */
  pgliteTemplate: Type.Union([Type.String({ minLength: 1 }), Type.Null()]),
  tlsCertFile: Type.Union([Type.String(), Type.Null()]),
  tlsKeyFile: Type.Union([Type.String(), Type.Null()]),
  trustProxy: Type.Union([Type.String(), Type.Null()]),
  logLevel: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
  ),
  shutdownTimeoutMs: Type.Integer({ minimum: 0 }),
  /** A request (headers and body) must arrive whole within this time, or 408 and the connection closes. */
  bodyTimeoutMs: Type.Integer({ minimum: 1000 }),
  /**
   * Longest a PostgreSQL statement may run before the client gives up and drops its connection: the
   * bound on a request or worker waiting on a database that hangs (platform/db/postgres.ts).
   */
  databaseStatementTimeoutMs: Type.Integer({ minimum: 100, maximum: 3_600_000 }),
  /** Events one worker claims per transaction; null = the engine's default (processing.worker.ts). */
  workerBatchSize: Type.Union([Type.Integer({ minimum: 1, maximum: 10_000 }), Type.Null()]),
  /** Claiming loops per worker process; null = the engine's default (processing.policy.ts). */
  workerLoops: Type.Union([Type.Integer({ minimum: 1, maximum: 8 }), Type.Null()]),
  /** The built web console served at `/`; null = web/dist of this checkout (docs/console.md). */
  consoleDir: Type.Union([Type.String({ minLength: 1 }), Type.Null()]),
});

export type Config = Static<typeof ConfigSchema>;

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>;

const orNull = (v: string | undefined): string | null => (v === undefined || v === '' ? null : v);

const toBool = (v: string | undefined): boolean => v === '1' || v === 'true' || v === 'yes';

const toInt = (name: string, v: string | undefined, fallback: number): number => {
  if (v === undefined || v === '') return fallback;
  if (!/^\d+$/.test(v)) throw new ConfigError(`${name} must be a whole number, got "${v}"`);
  return Number(v);
};

/** Reads the configuration from an environment map; throws ConfigError naming the bad variable. */
export function loadConfig(env: Env = process.env): Readonly<Config> {
  const candidate = {
    port: toInt('PORT', env.PORT, 8080),
    host: env.HOST || '127.0.0.1',
    role: env.ROLE || 'all',
    dataDir: env.DATA_DIR || './data',
    databaseUrl: orNull(env.DATABASE_URL),
    databaseSchema: orNull(env.DATABASE_SCHEMA),
    redisUrl: orNull(env.REDIS_URL),
    initialAdminKey: orNull(env.CDP_INITIAL_ADMIN_KEY),
    operatorToken: orNull(env.CDP_OPERATOR_TOKEN),
    allowPrivateWebhooks: toBool(env.CDP_ALLOW_PRIVATE_WEBHOOKS),
    pgliteInProcess: toBool(env.PGLITE_IN_PROCESS),
    pgliteTemplate: orNull(env.PGLITE_TEMPLATE),
    tlsCertFile: orNull(env.TLS_CERT_FILE),
    tlsKeyFile: orNull(env.TLS_KEY_FILE),
    trustProxy: orNull(env.TRUST_PROXY),
    logLevel: env.LOG_LEVEL || 'info',
    shutdownTimeoutMs: toInt('SHUTDOWN_TIMEOUT_MS', env.SHUTDOWN_TIMEOUT_MS, 10_000),
    bodyTimeoutMs: toInt('BODY_TIMEOUT_MS', env.BODY_TIMEOUT_MS, 60_000),
    databaseStatementTimeoutMs: toInt(
      'DATABASE_STATEMENT_TIMEOUT_MS',
      env.DATABASE_STATEMENT_TIMEOUT_MS,
      5_000, // POSTGRES_QUERY_TIMEOUT_MS
    ),
    workerBatchSize: env.WORKER_BATCH_SIZE ? toInt('WORKER_BATCH_SIZE', env.WORKER_BATCH_SIZE, 0) : null,
    workerLoops: env.WORKER_LOOPS ? toInt('WORKER_LOOPS', env.WORKER_LOOPS, 0) : null,
    consoleDir: orNull(env.CONSOLE_DIR),
  };
  const errors = [...Value.Errors(ConfigSchema, candidate)];
  if (errors.length > 0) {
    const first = errors[0]!;
    throw new ConfigError(`invalid setting ${envNameOf(first.instancePath)}: ${first.message}`);
  }
  if ((candidate.tlsCertFile === null) !== (candidate.tlsKeyFile === null)) {
    throw new ConfigError('TLS_CERT_FILE and TLS_KEY_FILE must be set together');
  }
  const badProxies = (candidate.trustProxy ?? '')
    .split(',')
    .filter((a) => a !== '' && !isProxyAddress(a.trim()));
  if (badProxies.length > 0) {
    // Fastify would otherwise fail at start with a bare "invalid IP address".
    throw new ConfigError(
      `TRUST_PROXY lists proxy addresses (IP, IP/prefix, loopback, linklocal or uniquelocal), got "${badProxies.join(',')}"`,
    );
  }
  if (candidate.tlsCertFile === null && candidate.trustProxy === null && !isLoopbackHost(candidate.host)) {
    throw new ConfigError(
      `refusing plain HTTP on non-loopback HOST=${candidate.host}: set TLS_CERT_FILE/TLS_KEY_FILE, ` +
        'or TRUST_PROXY to the address of a TLS-terminating proxy',
    );
  }
  return Object.freeze(candidate as Config);
}

const ENV_NAMES: Record<string, string> = {
  port: 'PORT',
  host: 'HOST',
  role: 'ROLE',
  dataDir: 'DATA_DIR',
  pgliteTemplate: 'PGLITE_TEMPLATE',
  databaseUrl: 'DATABASE_URL',
  databaseSchema: 'DATABASE_SCHEMA',
  redisUrl: 'REDIS_URL',
  initialAdminKey: 'CDP_INITIAL_ADMIN_KEY',
  operatorToken: 'CDP_OPERATOR_TOKEN',
  logLevel: 'LOG_LEVEL',
  tlsCertFile: 'TLS_CERT_FILE',
  tlsKeyFile: 'TLS_KEY_FILE',
  trustProxy: 'TRUST_PROXY',
  shutdownTimeoutMs: 'SHUTDOWN_TIMEOUT_MS',
  bodyTimeoutMs: 'BODY_TIMEOUT_MS',
  workerBatchSize: 'WORKER_BATCH_SIZE',
  workerLoops: 'WORKER_LOOPS',
  databaseStatementTimeoutMs: 'DATABASE_STATEMENT_TIMEOUT_MS',
  consoleDir: 'CONSOLE_DIR',
};

function envNameOf(instancePath: string): string {
  const key = instancePath.replace(/^\//, '').split('/')[0] ?? '';
  return ENV_NAMES[key] ?? key;
}

/** One TRUST_PROXY entry as Fastify (proxy-addr) accepts it. */
function isProxyAddress(a: string): boolean {
  if (a === 'loopback' || a === 'linklocal' || a === 'uniquelocal') return true;
  const [ip = '', bits, ...rest] = a.split('/');
  const version = isIP(ip);
  if (version === 0 || rest.length > 0) return false;
  return bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= (version === 4 ? 32 : 128));
}

export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}
