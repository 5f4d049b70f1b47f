import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../../../test/harness';
import { bootstrapDefaultWorkspace } from './workspaces.service';

const TOKEN = randomBytes(24).toString('base64url');

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService({ CDP_OPERATOR_TOKEN: TOKEN });
});
afterAll(async () => svc?.close());

const operator = (body: unknown, rawBody?: string) =>
  svc.call('POST', '/system/workspaces', {
    key: null,
    headers: { authorization: `Bearer ${TOKEN}` },
    ...(rawBody === undefined ? { body } : { rawBody }),
  });

describe('POST /system/workspaces (operator)', () => {
  it('creates a workspace and its first admin key, in the documented shape', async () => {
    const res = await operator({ name: 'Acme' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      status: 'success',
      data: {
        workspace: {
          id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/),
          name: 'Acme',
          created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        },
        api_key: {
          id: expect.stringMatching(/^key_/),
          name: 'admin',
          scopes: ['admin'],
          allowed_domains: [],
          created_at: expect.any(String),
          api_key: expect.stringMatching(/^cdp_sk_[A-Za-z0-9_-]{43}$/),
        },
      },
    });
    // Nothing else: no settings, no hash, no internal sequence numbers.
    expect(Object.keys(res.body.data.workspace).sort()).toEqual(['created_at', 'id', 'name']);
  });

  it('hands out a key that works at once and sees only its own workspace', async () => {
    const created = (await operator({ name: 'Isolated' })).body.data;
    const key = created.api_key.api_key;
    const mine = await svc.call('GET', '/tenant/apikeys', { key });
    expect(mine.status).toBe(200);
    expect(mine.body.data.map((k: { id: string }) => k.id)).toEqual([created.api_key.id]);

    // The default workspace's admin neither sees nor can revoke the new workspace's key…
    const theirs = await svc.call('GET', '/tenant/apikeys');
    expect(theirs.body.data.map((k: { id: string }) => k.id)).not.toContain(created.api_key.id);
    const del = await svc.call('DELETE', `/tenant/apikeys/${created.api_key.id}`);
    expect(del.status).toBe(404);
    expect(del.body.error_code).toBe('NOT_FOUND');
    // …and the new key cannot reach the default workspace's keys either.
    const defaultKeyId = theirs.body.data[0].id;
    expect((await svc.call('DELETE', `/tenant/apikeys/${defaultKeyId}`, { key })).status).toBe(404);
    expect((await svc.call('GET', '/tenant/apikeys', { key })).status).toBe(200);
  });

  it('allows two workspaces with the same name (names are labels; ids identify)', async () => {
    const one = (await operator({ name: 'Twin' })).body.data.workspace.id;
    const two = (await operator({ name: 'Twin' })).body.data.workspace.id;
    expect(one).not.toBe(two);
  });

  it('keeps a name of exactly 200 characters, with its inner and outer spaces', async () => {
    const name = ` ${'n'.repeat(198)} `;
    const res = await operator({ name });
    expect(res.status).toBe(200);
    expect(res.body.data.workspace.name).toBe(name);
  });

  it.each([
    [{}, '/name', 'is required'],
    [{ name: '' }, '/name', undefined],
    [{ name: '   ' }, '/name', undefined],
    [{ name: 'x'.repeat(201) }, '/name', undefined],
    [{ name: 42 }, '/name', undefined],
    [{ name: ['Acme'] }, '/name', undefined],
    [{ name: 'Acme', plan: 'pro' }, '/plan', 'is not a known field'],
  ])('refuses %j with VALIDATION_ERROR at %s', async (body, path, message) => {
    const res = await operator(body);
    expect(res.status).toBe(400);
    expect(res.body.status).toBe('error');
    expect(res.body.error_code).toBe('VALIDATION_ERROR');
    const detail = res.body.details.find((d: { path: string }) => d.path === path);
    expect(detail).toBeDefined();
    if (message) expect(detail.message).toBe(message);
  });

  it.each([
    ['not JSON', '{"name":', 'INVALID_JSON'],
    ['an array', '["Acme"]', 'VALIDATION_ERROR'],
    ['a prototype-polluting key', '{"name":"x","__proto__":{"admin":true}}', 'INVALID_JSON'],
  ])('refuses a body that is %s', async (_what, raw, code) => {
    const res = await operator(undefined, raw);
    expect(res.status).toBe(400);
    expect(res.body.error_code).toBe(code);
  });

  it('creates nothing when the request is refused', async () => {
    const count = async () =>
      (await svc.rt.deps.db.query<{ n: number }>('SELECT count(*)::int AS n FROM workspaces')).rows[0]!.n;
    const before = await count();
    await operator({ name: '' });
    await operator({ name: 'ok', extra: true });
    expect(await count()).toBe(before);
  });
});

describe('first-start bootstrap', () => {
  it('creates workspace "default" only on an empty database', async () => {
    // The harness already bootstrapped this database: a second run finds a workspace and does nothing.
    expect(await bootstrapDefaultWorkspace(svc.rt.deps.db, null)).toBeNull();
    const { rows } = await svc.rt.deps.db.query<{ name: string }>(
      `SELECT name FROM workspaces WHERE name = 'default'`,
    );
    expect(rows).toHaveLength(1);
  });

  it('gives the bootstrapped workspace the key from CDP_INITIAL_ADMIN_KEY', async () => {
    const res = await svc.call('GET', '/tenant/apikeys', { key: svc.config.initialAdminKey });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([expect.objectContaining({ name: 'initial admin', scopes: ['admin'] })]);
  });
});
