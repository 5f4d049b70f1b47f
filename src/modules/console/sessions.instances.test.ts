import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, vi } from 'vitest';
import { killAllChildren, request, type ServiceProcess, serviceEnv, startService } from '../../../test/child';
import { dropSchema } from '../../../test/harness';
import { onlyOn } from '../../../test/skips';
import { waitUntil } from '../../../test/wait';

// Whole services, two of them, on a busy machine.
vi.setConfig({ testTimeout: 180_000, hookTimeout: 180_000 });

/**
 * Console sessions across service instances on one PostgreSQL database (docs/console.md,
 * "Sessions"): a session made on one instance works on the other, a sign-out on one ends it on
 * both, and revoking the key on one ends its sessions on the other on the very next request.
 */
const OPERATOR_TOKEN = randomBytes(24).toString('base64url');
const severalProcesses = onlyOn('postgres', 'PGlite is one process');

async function fetchWith(url: string, method: string, path: string, cookie: string, csrf?: string) {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { cookie: `cdp_session=${cookie}`, ...(csrf ? { 'x-csrf-token': csrf } : {}) },
  });
  return { status: res.status, body: (await res.text()) || null };
}

async function signIn(url: string, apiKey: string) {
  const res = await fetch(`${url}/tenant/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ api_key: apiKey }),
  });
  expect(res.status).toBe(201);
  const cookie = /cdp_session=([^;]+)/.exec(res.headers.get('set-cookie') ?? '')![1]!;
  const body = (await res.json()) as { data: { csrf_token: string } };
  return { cookie, csrf: body.data.csrf_token };
}

severalProcesses.describe('console sessions on several instances', () => {
  const env = serviceEnv({ CDP_OPERATOR_TOKEN: OPERATOR_TOKEN });
  const admin = env.CDP_INITIAL_ADMIN_KEY!;
  let a: ServiceProcess;
  let b: ServiceProcess;

  beforeAll(async () => {
    a = await startService(env);
    b = await startService(env);
    // Each instance must count the other before a revocation waits for its confirmation.
    await waitUntil(
      async () => {
        const peers = await Promise.all(
          [a, b].map(
            async (p) => (await request(p.url!, 'GET', '/system/stats', { token: OPERATOR_TOKEN })).body,
          ),
        );
        return peers.every((s) => s?.data?.key_cache?.peers === 1);
      },
      { what: 'each instance to see the other', timeoutMs: 20_000, intervalMs: 100 },
    );
  });
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    killAllChildren();
    if (env.DATABASE_URL && env.DATABASE_SCHEMA) await dropSchema(env.DATABASE_URL, env.DATABASE_SCHEMA);
  });

  severalProcesses.it(
    'accepts a session on every instance, and a sign-out on one ends it on both',
    async () => {
      const { cookie, csrf } = await signIn(a.url!, admin);
      expect((await fetchWith(b.url!, 'GET', '/tenant/profiles', cookie)).status).toBe(200);
      expect((await fetchWith(b.url!, 'DELETE', '/tenant/session', cookie, csrf)).status).toBe(204);
      expect((await fetchWith(a.url!, 'GET', '/tenant/profiles', cookie)).status).toBe(401);
      expect((await fetchWith(b.url!, 'GET', '/tenant/profiles', cookie)).status).toBe(401);
    },
  );

  severalProcesses.it(
    'ends a key’s sessions on the other instance on its next request when the key is revoked',
    async () => {
      const made = await request(a.url!, 'POST', '/tenant/apikeys', {
        key: admin,
        body: { name: 'revoked across instances', scopes: ['editor'] },
      });
      const { cookie } = await signIn(a.url!, made.body.data.api_key);
      // Warm on both: the key is in each instance's cache.
      for (const p of [a, b])
        expect((await fetchWith(p.url!, 'GET', '/tenant/profiles', cookie)).status).toBe(200);
      expect(
        (await request(a.url!, 'DELETE', `/tenant/apikeys/${made.body.data.id}`, { key: admin })).status,
      ).toBe(200);
      // No wait: the DELETE answered after every instance confirmed the eviction.
      expect((await fetchWith(b.url!, 'GET', '/tenant/profiles', cookie)).status).toBe(401);
      expect((await fetchWith(a.url!, 'GET', '/tenant/profiles', cookie)).status).toBe(401);
    },
  );
});
