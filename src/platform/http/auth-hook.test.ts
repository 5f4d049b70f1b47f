import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../../../test/expect-error';
import { startTestService, type TestService } from '../../../test/harness';

/** The guard in front of every key-protected route: what a caller sees beyond the route matrix. */
let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc?.close());

describe('rate limits per key (docs/api.md "Rate limits")', () => {
  it('tells every authenticated answer its budget: RateLimit-Limit, -Remaining, -Reset', async () => {
    const key = await svc.ws.key(['admin']);
    const first = await svc.call('GET', '/tenant/apikeys?limit=1', { key });
    const second = await svc.call('GET', '/tenant/apikeys?limit=1', { key });
    expect(first.headers['ratelimit-limit']).toBe('1000');
    expect(Number(first.headers['ratelimit-remaining'])).toBe(999);
    expect(Number(second.headers['ratelimit-remaining'])).toBe(998);
    const reset = Number(second.headers['ratelimit-reset']);
    expect(reset).toBeGreaterThan(0);
    expect(reset).toBeLessThanOrEqual(60);
  });

  it('counts each key on its own', async () => {
    const a = await svc.ws.key(['admin']);
    const b = await svc.ws.key(['admin']);
    await svc.call('GET', '/tenant/apikeys?limit=1', { key: a });
    await svc.call('GET', '/tenant/apikeys?limit=1', { key: a });
    const res = await svc.call('GET', '/tenant/apikeys?limit=1', { key: b });
    expect(res.headers['ratelimit-remaining']).toBe('999');
  });

  it('answers 429 RATE_LIMITED with Retry-After once the workspace’s per-minute limit is spent', async () => {
    const ws = await svc.newWorkspace('limited');
    await svc.rt.deps.db.query(`UPDATE workspaces SET settings = $2::jsonb WHERE id = $1`, [
      ws.id,
      JSON.stringify({ rate_limits: { requests_per_minute: 3 } }),
    ]);
    // A key never used before, so no process holds the workspace settings of before the update.
    const key = await ws.key(['viewer', 'admin']);
    const remaining: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await svc.call('GET', '/tenant/apikeys?limit=1', { key });
      expect(res.status).toBe(200);
      expect(res.headers['ratelimit-limit']).toBe('3');
      remaining.push(String(res.headers['ratelimit-remaining']));
    }
    expect(remaining).toEqual(['2', '1', '0']);

    const refused = await svc.call('GET', '/tenant/apikeys?limit=1', { key });
    expectError(refused, 429, 'RATE_LIMITED');
    const retryAfter = Number(refused.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(refused.headers['ratelimit-remaining']).toBe('0');

    // Other workspaces are untouched.
    expect((await svc.call('GET', '/tenant/apikeys?limit=1')).status).toBe(200);
  });

  it('does not charge refused callers: no key, a bad key or a missing scope cost nothing', async () => {
    const ws = await svc.newWorkspace('charged');
    await svc.rt.deps.db.query(`UPDATE workspaces SET settings = $2::jsonb WHERE id = $1`, [
      ws.id,
      JSON.stringify({ rate_limits: { requests_per_minute: 2 } }),
    ]);
    const viewer = await ws.key(['viewer']);
    for (let i = 0; i < 5; i++) {
      expectError(await svc.call('GET', '/tenant/apikeys', { key: viewer }), 403, 'INSUFFICIENT_SCOPE');
    }
    const admin = await ws.key(['admin']);
    expect(
      (await svc.call('GET', '/tenant/apikeys?limit=1', { key: admin })).headers['ratelimit-remaining'],
    ).toBe('1');
  });
});

describe('the key header', () => {
  it('refuses two X-API-Key headers: 401 INVALID_TENANT_KEY', async () => {
    const res = await svc.app.inject({
      method: 'GET',
      url: '/tenant/apikeys',
      headers: { 'x-api-key': [svc.ws.adminKey, svc.ws.adminKey] },
    });
    expect(res.statusCode).toBe(401);
    expect(res.json().error_code).toBe('INVALID_TENANT_KEY');
  });

  it('treats an empty X-API-Key as missing', async () => {
    expectError(await svc.call('GET', '/tenant/apikeys', { key: '' }), 401, 'MISSING_API_KEY');
  });

  it('guards the HEAD twin of every GET like the GET', async () => {
    const res = await svc.app.inject({ method: 'HEAD', url: '/tenant/apikeys' });
    expect(res.statusCode).toBe(401);
    const viewer = await svc.ws.key(['viewer']);
    const scoped = await svc.app.inject({
      method: 'HEAD',
      url: '/tenant/apikeys',
      headers: { 'x-api-key': viewer },
    });
    expect(scoped.statusCode).toBe(403);
  });

  it('never echoes the key it was given', async () => {
    const bogus = `cdp_sk_${'Z'.repeat(43)}`;
    const res = await svc.call('GET', '/tenant/apikeys', { key: bogus });
    expectError(res, 401, 'INVALID_TENANT_KEY');
    expect(res.text).not.toContain(bogus);
  });
});
