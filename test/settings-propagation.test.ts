import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { killAllChildren, request, type ServiceProcess, serviceEnv, startService } from './child';
import { dropSchema } from './harness';
import { onlyOn } from './skips';
import { waitUntil } from './wait';

// Each test spawns whole services (seconds each on a busy 2-core machine): allow for it.
vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

/**
 * Workspace settings are cached in every process; a change must apply on every process at once
 * (within a second at most), not when a cache entry expires. Two service processes on one
 * PostgreSQL schema; PGlite is one process, so this runs in the PostgreSQL pass only.
 */
const PG_URL = process.env.DATABASE_URL;
const OPERATOR_TOKEN = randomBytes(24).toString('base64url');

const settingsPeers = async (p: ServiceProcess): Promise<number> =>
  (await request(p.url!, 'GET', '/system/stats', { token: OPERATOR_TOKEN })).body.data.settings_cache.peers;

const limitOf = async (p: ServiceProcess, key: string) => {
  const res = await request(p.url!, 'GET', '/tenant/settings', { key });
  expect(res.status).toBe(200);
  return Number(res.headers.get('ratelimit-limit'));
};

onlyOn('postgres', 'PGlite is one process').describe('settings changes across processes', () => {
  const env = serviceEnv({ CDP_OPERATOR_TOKEN: OPERATOR_TOKEN });
  const admin = env.CDP_INITIAL_ADMIN_KEY!;
  let a: ServiceProcess;
  let b: ServiceProcess;

  beforeAll(async () => {
    a = await startService(env);
    b = await startService(env);
    // A change waits for the confirmation of every process it knows of: let them meet first.
    await waitUntil(async () => (await settingsPeers(a)) === 1 && (await settingsPeers(b)) === 1, {
      what: 'the two processes to see each other',
      intervalMs: 50,
    });
  });
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    killAllChildren();
    if (PG_URL && env.DATABASE_SCHEMA) await dropSchema(PG_URL, env.DATABASE_SCHEMA);
  });

  it('applies a rate limit PATCHed on one process on the next request to the other, 10 times in a row', async () => {
    for (let i = 1; i <= 10; i++) {
      const [writer, other] = i % 2 === 0 ? [a, b] : [b, a];
      // The other process has the current settings cached (warm), then one changes them.
      await limitOf(other, admin);
      await limitOf(other, admin);
      const limit = 10_000 + i;
      const res = await request(writer.url!, 'PATCH', '/tenant/settings', {
        key: admin,
        body: { rate_limits: { requests_per_minute: limit } },
      });
      expect(res.status).toBe(200);
      expect(res.body.data.rate_limits.requests_per_minute).toBe(limit);
      const t0 = performance.now();
      expect(await limitOf(other, admin)).toBe(limit);
      expect(performance.now() - t0).toBeLessThan(1_000);
    }
  });

  it('applies a junk identifier list PATCHed on one process to events the other takes in', async () => {
    const res = await request(a.url!, 'PATCH', '/tenant/settings', {
      key: admin,
      body: { junk_identifiers: ['shared-device@shop.test'] },
    });
    expect(res.status).toBe(200);
    const anons = [randomUUID(), randomUUID()];
    for (const anonymous_id of anons) {
      const sent = await request(b.url!, 'POST', '/api/ingest', {
        key: admin,
        body: {
          event_type: 'identify',
          event_name: 'Signed in',
          anonymous_id,
          identity: 'shared-device@shop.test',
        },
      });
      expect(sent.status).toBe(202);
    }
    // Either process's worker may apply them: wait until both have a profile.
    const profileOf = async (identity: string) =>
      (await request(b.url!, 'GET', `/tenant/profiles?identity=${identity}`, { key: admin })).body.data;
    await waitUntil(
      async () => (await profileOf(anons[0]!)).length > 0 && (await profileOf(anons[1]!)).length > 0,
      { what: 'a profile for each device', timeoutMs: 20_000, intervalMs: 100 },
    );
    expect((await profileOf(anons[0]!))[0].id).not.toBe((await profileOf(anons[1]!))[0].id);
    expect(await profileOf('shared-device%40shop.test')).toEqual([]);
  });

  it('applies a change written by hand (or by `cdp settings set`) on every process within a second', async () => {
    await Promise.all([limitOf(a, admin), limitOf(b, admin)]);
    const db = new pg.Client({ connectionString: PG_URL, options: `-c search_path=${env.DATABASE_SCHEMA}` });
    await db.connect();
    try {
      await db.query(
        `UPDATE workspaces SET settings = jsonb_set(settings, '{rate_limits}', '{"requests_per_minute": 4321}')`,
      );
    } finally {
      await db.end();
    }
    // Within a second is the promise: the deadline is the assertion.
    await waitUntil(async () => (await limitOf(a, admin)) === 4321 && (await limitOf(b, admin)) === 4321, {
      what: 'both processes to apply the change',
      timeoutMs: 1_000,
      intervalMs: 10,
    });
  });
});
