import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../../../test/expect-error';
import { type Reply, startTestService, type TestService } from '../../../test/harness';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc?.close());

/** The `cdp_session` Set-Cookie of a reply, parsed: its value and its attributes (lower-case). */
function sessionCookieOf(res: Reply): { value: string; attrs: string[] } {
  const raw = res.headers['set-cookie'];
  const all = Array.isArray(raw) ? raw : raw ? [String(raw)] : [];
  const line = all.find((c) => c.startsWith('cdp_session='));
  if (!line) throw new Error(`no cdp_session cookie in ${JSON.stringify(all)}`);
  const [pair, ...attrs] = line.split(';').map((s) => s.trim());
  return { value: pair!.slice('cdp_session='.length), attrs: attrs.map((a) => a.toLowerCase()) };
}

async function signIn(apiKey: string, headers: Record<string, string> = {}) {
  const res = await svc.call('POST', '/tenant/session', { key: null, body: { api_key: apiKey }, headers });
  expect(res.status, res.text).toBe(201);
  const cookie = sessionCookieOf(res);
  return { res, token: cookie.value, csrf: res.body.data.csrf_token as string };
}

/** A request made the way the console makes it: the cookie, and the CSRF token when given. */
const asConsole = (token: string, csrf?: string) => ({
  key: null,
  headers: { cookie: `cdp_session=${token}`, ...(csrf ? { 'x-csrf-token': csrf } : {}) },
});

describe('console sessions', () => {
  it('exchanges a key for an HttpOnly, SameSite=Strict cookie and describes the session', async () => {
    const { res, token, csrf } = await signIn(svc.ws.adminKey);
    const cookie = sessionCookieOf(res);
    expect(cookie.attrs).toEqual(expect.arrayContaining(['httponly', 'samesite=strict', 'path=/']));
    // Plain HTTP: a Secure cookie would never come back.
    expect(cookie.attrs).not.toContain('secure');
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(res.body.data).toMatchObject({
      workspace_id: svc.ws.id,
      workspace_name: 'default',
      key_id: expect.stringMatching(/^key_/),
      scopes: ['admin'],
      csrf_token: expect.any(String),
    });
    const abs = Date.parse(res.body.data.expires_at) - Date.now();
    const idle = Date.parse(res.body.data.idle_expires_at) - Date.now();
    expect(abs).toBeGreaterThan(11.9 * 3600_000);
    expect(idle).toBeGreaterThan(29 * 60_000);
    expect(idle).toBeLessThanOrEqual(30 * 60_000);
    // The answer never contains the key, and the database never the token.
    expect(res.text).not.toContain(svc.ws.adminKey);
    const dump = await svc.rt.deps.db.query('SELECT * FROM console_sessions');
    expect(JSON.stringify(dump.rows)).not.toContain(token);

    const again = await svc.call('GET', '/tenant/session', asConsole(token));
    expect(again.status).toBe(200);
    expect(again.body.data).toMatchObject({ key_id: res.body.data.key_id, csrf_token: csrf });
  });

  it('authenticates every API route with the key’s scopes', async () => {
    const { token } = await signIn(svc.ws.adminKey);
    const profiles = await svc.call('GET', '/tenant/profiles', asConsole(token));
    expect(profiles.status).toBe(200);
    const keys = await svc.call('GET', '/tenant/apikeys', asConsole(token));
    expect(keys.status).toBe(200);
  });

  it('refuses an unknown key with 401 and an ingest-only key with a clear 403', async () => {
    const unknown = await svc.call('POST', '/tenant/session', {
      key: null,
      body: { api_key: `cdp_sk_${'x'.repeat(43)}` },
    });
    expectError(unknown, 401, 'INVALID_TENANT_KEY');
    const ingest = await svc.call('POST', '/tenant/session', {
      key: null,
      body: { api_key: await svc.ws.key(['ingest']) },
    });
    expectError(ingest, 403, 'INSUFFICIENT_SCOPE');
    expect(ingest.body.message).toContain('can only send events');
    expect(ingest.headers['set-cookie']).toBeUndefined();
  });

  it('refuses a state-changing request made with the cookie but without the CSRF token', async () => {
    const { token, csrf } = await signIn(svc.ws.adminKey);
    const body = { name: 'csrf test', scopes: ['viewer'] };
    const none = await svc.call('POST', '/tenant/apikeys', { ...asConsole(token), body });
    expectError(none, 403, 'CSRF_TOKEN_INVALID');
    const wrong = await svc.call('POST', '/tenant/apikeys', {
      ...asConsole(token, `${csrf.slice(1)}x`),
      body,
    });
    expectError(wrong, 403, 'CSRF_TOKEN_INVALID');
    const right = await svc.call('POST', '/tenant/apikeys', { ...asConsole(token, csrf), body });
    expect(right.status).toBe(200);
    // A request with a key is not the console's: no CSRF token needed, the cookie is ignored.
    const withKey = await svc.call('POST', '/tenant/apikeys', {
      headers: { cookie: `cdp_session=${token}` },
      body: { ...body, name: 'with key' },
    });
    expect(withKey.status).toBe(200);
  });

  it('gives a viewer key a read-only session', async () => {
    const { token, csrf, res } = await signIn(await svc.ws.key(['viewer']));
    expect(res.body.data.scopes).toEqual(['viewer']);
    expect((await svc.call('GET', '/tenant/profiles', asConsole(token))).status).toBe(200);
    const write = await svc.call('POST', '/tenant/segments', {
      ...asConsole(token, csrf),
      body: { name: 'nope', query: { field: 'email', op: 'exists' } },
    });
    expectError(write, 403, 'INSUFFICIENT_SCOPE');
    expectError(await svc.call('GET', '/tenant/apikeys', asConsole(token)), 403, 'INSUFFICIENT_SCOPE');
  });

  it('ends the session on the server at sign-out', async () => {
    const { token, csrf } = await signIn(svc.ws.adminKey);
    expectError(await svc.call('DELETE', '/tenant/session', asConsole(token)), 403, 'CSRF_TOKEN_INVALID');
    const out = await svc.call('DELETE', '/tenant/session', asConsole(token, csrf));
    expect(out.status).toBe(204);
    expect(sessionCookieOf(out).value).toBe('');
    // The same cookie, replayed, no longer works.
    expectError(await svc.call('GET', '/tenant/session', asConsole(token)), 401, 'INVALID_SESSION');
    expectError(await svc.call('GET', '/tenant/profiles', asConsole(token)), 401, 'INVALID_SESSION');
  });

  it('ends a key’s sessions when the key is revoked', async () => {
    const created = await svc.call('POST', '/tenant/apikeys', {
      body: { name: 'short-lived', scopes: ['editor'] },
    });
    const { token } = await signIn(created.body.data.api_key);
    expect((await svc.call('GET', '/tenant/profiles', asConsole(token))).status).toBe(200);
    expect((await svc.call('DELETE', `/tenant/apikeys/${created.body.data.id}`)).status).toBe(200);
    expectError(await svc.call('GET', '/tenant/profiles', asConsole(token)), 401, 'INVALID_SESSION');
    const { rows } = await svc.rt.deps.db.query('SELECT 1 FROM console_sessions WHERE key_id = $1', [
      created.body.data.id,
    ]);
    expect(rows).toHaveLength(0);
  });

  it('ends an idle session, and a use pushes the idle end forward', async () => {
    const { token } = await signIn(svc.ws.adminKey);
    const db = svc.rt.deps.db;
    // Used 2 minutes ago: the next request moves the idle end to 30 min from now.
    await db.query(
      `UPDATE console_sessions SET idle_expires_at = now() + interval '28 minutes'
        WHERE id = (SELECT id FROM console_sessions ORDER BY created_at DESC LIMIT 1)`,
    );
    const res = await svc.call('GET', '/tenant/session', asConsole(token));
    expect(Date.parse(res.body.data.idle_expires_at) - Date.now()).toBeGreaterThan(29 * 60_000);
    await db.query(
      `UPDATE console_sessions SET idle_expires_at = now() - interval '1 second'
        WHERE id = (SELECT id FROM console_sessions ORDER BY created_at DESC LIMIT 1)`,
    );
    expectError(await svc.call('GET', '/tenant/profiles', asConsole(token)), 401, 'INVALID_SESSION');
  });

  it('refuses a malformed cookie as an ended session, and no credential at all as a missing key', async () => {
    expectError(await svc.call('GET', '/tenant/session', asConsole('nope')), 401, 'INVALID_SESSION');
    expectError(await svc.call('GET', '/tenant/session', { key: null }), 401, 'MISSING_API_KEY');
  });

  it('limits sign-in attempts per client address', async () => {
    const limited = await startTestService();
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 31; i++) {
        const res = await limited.call('POST', '/tenant/session', {
          key: null,
          body: { api_key: 'wrong' },
          headers: {},
        });
        statuses.push(res.status);
      }
      expect(statuses.slice(0, 30).every((s) => s === 401)).toBe(true);
      expect(statuses[30]).toBe(429);
    } finally {
      await limited.close();
    }
  });

  it('marks the cookie Secure when the request came over HTTPS through a trusted proxy', async () => {
    const proxied = await startTestService({ TRUST_PROXY: '127.0.0.1' });
    try {
      const res = await proxied.call('POST', '/tenant/session', {
        key: null,
        body: { api_key: proxied.ws.adminKey },
        headers: { 'x-forwarded-proto': 'https' },
      });
      expect(res.status).toBe(201);
      expect(sessionCookieOf(res).attrs).toContain('secure');
    } finally {
      await proxied.close();
    }
  });
});
