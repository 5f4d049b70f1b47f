import { createHash, randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { killAllChildren, request, type ServiceProcess, serviceEnv, startService } from './child';
import { dropSchema } from './harness';
import { needs, onlyOn } from './skips';
import { waitUntil } from './wait';

// Each test spawns whole services (seconds each on a busy 2-core machine): allow for it.
vi.setConfig({ testTimeout: 180_000, hookTimeout: 180_000 });

/**
 * Guarantees that only hold with several service processes on one PostgreSQL database: a deleted
 * key fails on the very next request on every process (docs/api.md, "Authentication and scopes"), and with Redis the rate
 * limits are one budget (docs/api.md, "Rate limits"). PGlite is a single-process database, so these are skipped
 * on it; scripts/test.sh runs them in its PostgreSQL pass (with Redis when reachable).
 */
const PG_URL = process.env.DATABASE_URL;
const REDIS_URL = process.env.TEST_REDIS_URL;
const OPERATOR_TOKEN = randomBytes(24).toString('base64url');

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

async function stats(p: ServiceProcess) {
  const res = await request(p.url!, 'GET', '/system/stats', { token: OPERATOR_TOKEN });
  expect(res.status).toBe(200);
  return res.body.data.key_cache as {
    hits: number;
    misses: number;
    entries: number;
    trusted: boolean;
    peers: number;
  };
}

const waitFor = (what: string, check: () => Promise<boolean>, timeoutMs = 10_000) =>
  waitUntil(check, { what, timeoutMs, intervalMs: 50 });

async function stopAll(procs: Array<ServiceProcess | undefined>, env: Record<string, string>) {
  await Promise.all(procs.map((p) => p?.stop()));
  killAllChildren();
  if (PG_URL && env.DATABASE_SCHEMA) await dropSchema(PG_URL, env.DATABASE_SCHEMA);
}

const severalProcesses = onlyOn('postgres', 'PGlite is one process');

severalProcesses.describe('key revocation across processes', () => {
  const env = serviceEnv({ CDP_OPERATOR_TOKEN: OPERATOR_TOKEN });
  const admin = env.CDP_INITIAL_ADMIN_KEY!;
  let a: ServiceProcess;
  let b: ServiceProcess;
  let c: ServiceProcess | undefined;

  beforeAll(async () => {
    a = await startService(env);
    b = await startService(env);
    await waitFor('each process to see the other', async () => {
      const [sa, sb] = await Promise.all([stats(a), stats(b)]);
      return sa.peers === 1 && sb.peers === 1;
    });
  });
  afterAll(() => stopAll([a, b, c], env));

  it('fails a deleted key on the very next request to the other process, 20 times in a row', async () => {
    for (let i = 0; i < 20; i++) {
      // Alternate which process deletes, so both directions are covered.
      const [deleter, other] = i % 2 === 0 ? [a, b] : [b, a];
      const created = await request(deleter.url!, 'POST', '/tenant/apikeys', {
        key: admin,
        body: { name: `cycle ${i}`, scopes: ['admin'] },
      });
      expect(created.status).toBe(200);
      const { id, api_key: secret } = created.body.data;

      const before = await stats(other);
      expect(before.trusted).toBe(true);
      for (let n = 0; n < 3; n++) {
        expect((await request(other.url!, 'GET', '/tenant/apikeys?limit=1', { key: secret })).status).toBe(
          200,
        );
      }
      const warm = await stats(other);
      // One database lookup, then answered from memory: the cache is really in play.
      expect(warm.misses - before.misses).toBe(1);
      expect(warm.hits - before.hits).toBe(2);

      const del = await request(deleter.url!, 'DELETE', `/tenant/apikeys/${id}`, { key: admin });
      expect(del.status).toBe(200);

      const next = await request(other.url!, 'GET', '/tenant/apikeys?limit=1', { key: secret });
      expect(next.status).toBe(401);
      expect(next.body.error_code).toBe('INVALID_TENANT_KEY');
    }
  });

  it('answers preflights on the other process for a key created on one, until it is revoked', async () => {
    const preflight = (p: ServiceProcess) =>
      fetch(`${p.url}/api/ingest`, {
        method: 'OPTIONS',
        headers: { origin: 'https://www.cross-process.example', 'access-control-request-method': 'POST' },
      }).then((res) => res.status);
    expect(await preflight(b)).toBe(403);
    const created = await request(a.url!, 'POST', '/tenant/apikeys', {
      key: admin,
      body: { name: 'site', scopes: ['ingest'], allowed_domains: ['*.cross-process.example'] },
    });
    expect(created.status).toBe(200);
    // Notified, then read again by the other process: well within a second.
    await waitFor(
      'the other process to allow the new origin',
      async () => (await preflight(b)) === 204,
      1_000,
    );
    await request(a.url!, 'DELETE', `/tenant/apikeys/${created.body.data.id}`, { key: admin });
    await waitFor('the other process to refuse it again', async () => (await preflight(b)) === 403, 1_000);
  });

  it('still revokes, within the confirmation timeout, when a peer died without saying goodbye', async () => {
    c = await startService(env);
    const created = await request(a.url!, 'POST', '/tenant/apikeys', {
      key: admin,
      body: { name: 'after a crash', scopes: ['admin'] },
    });
    const secret = created.body.data.api_key;
    expect((await request(b.url!, 'GET', '/tenant/apikeys?limit=1', { key: secret })).status).toBe(200);
    await waitFor('the third process to join', async () => (await stats(a)).peers === 2);

    // Crash it and revoke at once, before the others forget it (3 s without a heartbeat).
    c.kill('SIGKILL');
    await c.exited;
    const t0 = performance.now();
    const del = await request(a.url!, 'DELETE', `/tenant/apikeys/${created.body.data.id}`, { key: admin });
    const waited = performance.now() - t0;
    expect(del.status).toBe(200);
    // The dead peer cannot confirm: the revoker waits for it, at most its 3 s timeout, then answers.
    expect(waited).toBeGreaterThan(1_000);
    expect(waited).toBeLessThan(6_000);
    expect((await request(b.url!, 'GET', '/tenant/apikeys?limit=1', { key: secret })).status).toBe(401);
    // (Its log line may reach us a moment after the response.)
    await waitFor('the warning about the silent peer', async () =>
      a.logs().some((l) => String(l.msg).includes('not confirmed by every service process')),
    );
  });
});

severalProcesses.and(needs('redis')).describe('Redis shared by two processes', () => {
  const env = serviceEnv({ CDP_OPERATOR_TOKEN: OPERATOR_TOKEN, REDIS_URL: REDIS_URL ?? '' });
  const admin = env.CDP_INITIAL_ADMIN_KEY!;
  const schema = env.DATABASE_SCHEMA!;
  // The service prefixes every Redis key and channel with its schema: unique to this run.
  const prefix = `cdp:${schema}:`;
  let a: ServiceProcess;
  let b: ServiceProcess;
  let redis: Redis;

  beforeAll(async () => {
    redis = new Redis(REDIS_URL!, { lazyConnect: true });
    await redis.connect();
    [a, b] = await Promise.all([startService(env), startService(env)]);
  });
  afterAll(async () => {
    await stopAll([a, b], env);
    if (redis) {
      const keys: string[] = [];
      let cursor = '0';
      do {
        const [next, batch] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
        cursor = next;
        keys.push(...batch);
      } while (cursor !== '0');
      if (keys.length > 0) await redis.del(...keys);
      redis.disconnect();
    }
  });

  it('counts one rate-limit budget across both processes', async () => {
    const created = await request(a.url!, 'POST', '/tenant/apikeys', {
      key: admin,
      body: { name: 'limited', scopes: ['admin'] },
    });
    const secret = created.body.data.api_key;
    // Answered once both processes dropped the old settings (test/settings-propagation.test.ts).
    const limited = await request(a.url!, 'PATCH', '/tenant/settings', {
      key: admin,
      body: { rate_limits: { requests_per_minute: 10 } },
    });
    expect(limited.status).toBe(200);

    const replies = [];
    for (let i = 0; i < 12; i++) {
      const p = i % 2 === 0 ? a : b;
      replies.push(await request(p.url!, 'GET', '/tenant/apikeys?limit=1', { key: secret }));
    }
    expect(replies.map((r) => r.status)).toEqual([...Array(10).fill(200), 429, 429]);
    expect(replies.map((r) => r.headers.get('ratelimit-remaining'))).toEqual([
      '9',
      '8',
      '7',
      '6',
      '5',
      '4',
      '3',
      '2',
      '1',
      '0',
      '0',
      '0',
    ]);
    for (const r of replies) expect(r.headers.get('ratelimit-limit')).toBe('10');
    for (const r of replies.slice(10)) {
      expect(r.body.error_code).toBe('RATE_LIMITED');
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(Number(r.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    }
    const stored = await redis.keys(`${prefix}rl:standard:10*`);
    expect(stored.length).toBeGreaterThan(0);
  });

  it('broadcasts a revocation on Redis, and the other process refuses the key at once', async () => {
    const sub = redis.duplicate();
    const heard: string[] = [];
    sub.on('message', (_channel: string, hash: string) => heard.push(hash));
    await sub.subscribe(`${prefix}key-revoked`);
    try {
      const created = await request(a.url!, 'POST', '/tenant/apikeys', {
        key: admin,
        body: { name: 'broadcast', scopes: ['admin'] },
      });
      const secret = created.body.data.api_key;
      expect((await request(b.url!, 'GET', '/tenant/apikeys?limit=1', { key: secret })).status).toBe(200);
      const del = await request(a.url!, 'DELETE', `/tenant/apikeys/${created.body.data.id}`, {
        key: admin,
      });
      expect(del.status).toBe(200);
      expect((await request(b.url!, 'GET', '/tenant/apikeys?limit=1', { key: secret })).status).toBe(401);
      await waitFor('the Redis message', async () => heard.length > 0, 2_000);
      expect(heard).toEqual([sha256(secret)]);
    } finally {
      sub.disconnect();
    }
  });
});
