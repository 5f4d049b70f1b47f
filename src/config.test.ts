import fc from 'fast-check';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { ConfigError, isLoopbackHost, loadConfig } from './config';

/** Configuration is read once from the environment; a bad value stops the start with its name. */
const refusal = (env: Record<string, string>): string => {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error(`expected ${JSON.stringify(env)} to be refused`);
};

describe('loadConfig', () => {
  it('starts with the documented defaults from an empty environment', () => {
    expect(loadConfig({})).toMatchObject({
      port: 8080,
      host: '127.0.0.1',
      role: 'all',
      dataDir: './data',
      databaseUrl: null,
      redisUrl: null,
      initialAdminKey: null,
      operatorToken: null,
      allowPrivateWebhooks: false,
      tlsCertFile: null,
      tlsKeyFile: null,
      trustProxy: null,
      logLevel: 'info',
      workerBatchSize: null,
      shutdownTimeoutMs: 10_000,
      bodyTimeoutMs: 60_000,
      databaseStatementTimeoutMs: 5_000,
    });
  });

  it('reads every setting it documents', () => {
    const c = loadConfig({
      PORT: '9000',
      HOST: 'localhost',
      ROLE: 'worker',
      DATA_DIR: '/var/lib/cdp',
      DATABASE_URL: 'postgresql://u@db:5432/cdp',
      REDIS_URL: 'rediss://cache:6380',
      CDP_INITIAL_ADMIN_KEY: `cdp_sk_${'a'.repeat(43)}`,
      CDP_OPERATOR_TOKEN: 'o'.repeat(16),
      CDP_ALLOW_PRIVATE_WEBHOOKS: '1',
      LOG_LEVEL: 'warn',
      WORKER_BATCH_SIZE: '64',
      WORKER_LOOPS: '1',
      SHUTDOWN_TIMEOUT_MS: '5000',
      BODY_TIMEOUT_MS: '120000',
      DATABASE_STATEMENT_TIMEOUT_MS: '30000',
      CONSOLE_DIR: '/srv/cdp-console',
    });
    expect(c).toMatchObject({
      consoleDir: '/srv/cdp-console',
      workerBatchSize: 64,
      workerLoops: 1,
      shutdownTimeoutMs: 5000,
      bodyTimeoutMs: 120_000,
      databaseStatementTimeoutMs: 30_000,
      port: 9000,
      host: 'localhost',
      role: 'worker',
      dataDir: '/var/lib/cdp',
      databaseUrl: 'postgresql://u@db:5432/cdp',
      redisUrl: 'rediss://cache:6380',
      allowPrivateWebhooks: true,
      logLevel: 'warn',
    });
  });

  it('is frozen, so nothing can change it after start', () => {
    const c = loadConfig({});
    expect(Object.isFrozen(c)).toBe(true);
  });

  it('treats an empty variable as unset', () => {
    expect(loadConfig({ PORT: '', DATABASE_URL: '', HOST: '' })).toMatchObject({
      port: 8080,
      databaseUrl: null,
      host: '127.0.0.1',
    });
  });

  it.each(['abc', '500', '1.5'])('refuses BODY_TIMEOUT_MS=%s (whole milliseconds, at least 1000)', (v) => {
    expect(refusal({ BODY_TIMEOUT_MS: v })).toMatch(/BODY_TIMEOUT_MS/);
  });

  it.each(['abc', '-1', '80.5', '65536', '1e3', ' 80'])('refuses PORT=%s, naming PORT', (port) => {
    expect(refusal({ PORT: port })).toMatch(/PORT/);
  });

  it.each(['mysql://db/x', 'localhost:5432', 'postgres:/x', 'http://db'])(
    'refuses DATABASE_URL=%s, naming DATABASE_URL',
    (url) => {
      expect(refusal({ DATABASE_URL: url })).toMatch(/DATABASE_URL/);
    },
  );

  it.each([
    ['ROLE', 'both'],
    ['LOG_LEVEL', 'loud'],
    ['REDIS_URL', 'localhost:6379'],
    ['CDP_INITIAL_ADMIN_KEY', 'short'],
    ['CDP_OPERATOR_TOKEN', 'short'],
    ['DATABASE_SCHEMA', 'Robert; DROP TABLE'],
    ['WORKER_BATCH_SIZE', '0'],
    ['WORKER_BATCH_SIZE', 'lots'],
    ['WORKER_LOOPS', '0'],
    ['WORKER_LOOPS', '9'],
  ])('refuses a bad %s, naming it', (name, value) => {
    expect(refusal({ [name]: value })).toMatch(name);
  });

  it('refuses TLS configured by halves', () => {
    expect(refusal({ TLS_CERT_FILE: '/etc/cdp/cert.pem' })).toMatch(/TLS_CERT_FILE and TLS_KEY_FILE/);
    expect(refusal({ TLS_KEY_FILE: '/etc/cdp/key.pem' })).toMatch(/TLS_CERT_FILE and TLS_KEY_FILE/);
  });

  describe('plain HTTP only on loopback or behind a trusted proxy (docs/operations.md, "TLS and proxies")', () => {
    it.each(['0.0.0.0', '::', '10.1.2.3', 'api.example.com'])(
      'refuses HOST=%s without TLS or TRUST_PROXY',
      (host) => {
        expect(refusal({ HOST: host })).toMatch(/refusing plain HTTP.*TLS_CERT_FILE.*TRUST_PROXY/);
      },
    );

    it('allows a public HOST with TLS', () => {
      const c = loadConfig({ HOST: '0.0.0.0', TLS_CERT_FILE: '/c.pem', TLS_KEY_FILE: '/k.pem' });
      expect(c).toMatchObject({ host: '0.0.0.0', tlsCertFile: '/c.pem', tlsKeyFile: '/k.pem' });
    });

    it('allows a public HOST behind a configured proxy', () => {
      expect(loadConfig({ HOST: '0.0.0.0', TRUST_PROXY: '10.0.0.1' }).trustProxy).toBe('10.0.0.1');
    });

    it.each(['127.0.0.1', '127.10.0.5', 'localhost', '::1'])(
      'allows plain HTTP on loopback HOST=%s',
      (host) => {
        expect(loadConfig({ HOST: host }).host).toBe(host);
      },
    );
  });
});

describe('TRUST_PROXY', () => {
  it.each([
    '10.0.0.1',
    '10.0.0.0/8',
    '10.0.0.1, 192.168.1.0/24',
    'loopback',
    '::1',
    'fd00::/8',
    'uniquelocal,10.1.1.1',
  ])('accepts %s, which Fastify accepts too', (value) => {
    const c = loadConfig({ TRUST_PROXY: value });
    expect(c.trustProxy).toBe(value);
    expect(() => Fastify({ trustProxy: value })).not.toThrow();
  });

  it.each(['true', 'yes', '1', 'proxy.internal', '10.0.0.1/33', '10.0.0.1/8/8', '10.0.0.1,nope'])(
    'refuses %s at start, naming TRUST_PROXY',
    (value) => {
      expect(refusal({ TRUST_PROXY: value })).toMatch(/TRUST_PROXY/);
    },
  );
});

describe('isLoopbackHost', () => {
  it('knows only loopback addresses as loopback', () => {
    fc.assert(
      fc.property(fc.ipV4(), (ip) => {
        expect(isLoopbackHost(ip)).toBe(ip.startsWith('127.'));
      }),
    );
    expect(isLoopbackHost('localhost.evil.com')).toBe(false);
    expect(isLoopbackHost('127.0.0.1.evil.com')).toBe(false);
  });
});
