import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../../../test/expect-error';
import { startTestService, type TestService } from '../../../test/harness';
import { hashKey } from './api-keys.service';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc?.close());

describe('API keys', () => {
  it('creates a key whose secret is shown once and works at once', async () => {
    const res = await svc.call('POST', '/tenant/apikeys', { body: { name: 'server', scopes: ['viewer'] } });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('success');
    const key = res.body.data;
    expect(key.api_key).toMatch(/^cdp_sk_[A-Za-z0-9_-]{43}$/);
    expect(key).toMatchObject({ name: 'server', scopes: ['viewer'], allowed_domains: [] });
    expect(key.id).toMatch(/^key_/);

    const list = await svc.call('GET', '/tenant/apikeys');
    const listed = list.body.data.find((k: { id: string }) => k.id === key.id);
    expect(listed).toEqual({
      id: key.id,
      name: 'server',
      scopes: ['viewer'],
      allowed_domains: [],
      created_at: key.created_at,
    });
    expect(list.text).not.toContain(key.api_key);
  });

  it('stores only a hash of the secret', async () => {
    const res = await svc.call('POST', '/tenant/apikeys', { body: { name: 'h', scopes: ['ingest'] } });
    const { rows } = await svc.rt.deps.db.query<{ key_hash: string }>(
      'SELECT key_hash FROM api_keys WHERE id = $1',
      [res.body.data.id],
    );
    expect(rows[0]!.key_hash).toMatch(/^[0-9a-f]{64}$/);
    const dump = await svc.rt.deps.db.query('SELECT * FROM api_keys');
    expect(JSON.stringify(dump.rows)).not.toContain(res.body.data.api_key);
  });

  it('gives browser keys (ingest + domains) the public prefix', async () => {
    const res = await svc.call('POST', '/tenant/apikeys', {
      body: { name: 'web', scopes: ['ingest'], allowed_domains: ['shop.example.com', '*.example.org'] },
    });
    expect(res.status).toBe(200);
    expect(res.body.data.api_key).toMatch(/^cdp_pk_/);
  });

  it.each([
    [{ name: 'x', scopes: [] }, '/scopes'],
    [{ name: 'x', scopes: ['root'] }, '/scopes/0'],
    [{ name: 'x', scopes: ['admin', 'admin'] }, '/scopes'],
    [{ name: '', scopes: ['admin'] }, '/name'],
    [{ name: 'x'.repeat(201), scopes: ['admin'] }, '/name'],
    [{ scopes: ['admin'] }, '/name'],
    [{ name: 'x', scopes: ['admin'], allowed_domains: ['https://a.com/'] }, '/allowed_domains/0'],
    [{ name: 'x', scopes: ['admin'], extra: 1 }, '/extra'],
  ])('refuses %j with a validation error at %s', async (body, path) => {
    const res = await svc.call('POST', '/tenant/apikeys', { body });
    expect(res.status).toBe(400);
    expect(res.body.error_code).toBe('VALIDATION_ERROR');
    expect(res.body.details.map((d: { path: string }) => d.path)).toContain(path);
  });

  it('revokes a key so that its very next request fails', async () => {
    const created = await svc.call('POST', '/tenant/apikeys', { body: { name: 'temp', scopes: ['admin'] } });
    const secret = created.body.data.api_key;
    expect((await svc.call('GET', '/tenant/apikeys', { key: secret })).status).toBe(200);

    const del = await svc.call('DELETE', `/tenant/apikeys/${created.body.data.id}`);
    expect(del.status).toBe(200);
    expect(del.body.data).toEqual({ id: created.body.data.id, revoked: true });

    const after = await svc.call('GET', '/tenant/apikeys', { key: secret });
    expect(after.status).toBe(401);
    expect(after.body.error_code).toBe('INVALID_TENANT_KEY');
    const list = await svc.call('GET', '/tenant/apikeys');
    expect(list.body.data.map((k: { id: string }) => k.id)).not.toContain(created.body.data.id);
  });

  it('answers 404 when revoking an unknown, already revoked or foreign key', async () => {
    expect((await svc.call('DELETE', '/tenant/apikeys/key_nope')).status).toBe(404);
    const other = await svc.newWorkspace();
    const foreign = await svc.call('GET', '/tenant/apikeys', { key: other.adminKey });
    const del = await svc.call('DELETE', `/tenant/apikeys/${foreign.body.data[0].id}`);
    expect(del.status).toBe(404);
    expect(del.body.error_code).toBe('NOT_FOUND');
    expect((await svc.call('GET', '/tenant/apikeys', { key: other.adminKey })).status).toBe(200);
  });

  it('pages the key list with cursors that neither repeat nor skip', async () => {
    const ws = await svc.newWorkspace('paging');
    for (let i = 0; i < 6; i++) {
      await svc.call('POST', '/tenant/apikeys', {
        key: ws.adminKey,
        body: { name: `k${i}`, scopes: ['viewer'] },
      });
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const url = `/tenant/apikeys?limit=3${cursor ? `&cursor=${cursor}` : ''}`;
      const res = await svc.call('GET', url, { key: ws.adminKey });
      expect(res.status).toBe(200);
      seen.push(...res.body.data.map((k: { name: string }) => k.name));
      cursor = res.body.pagination.next_cursor;
      expect(res.body.pagination.has_more).toBe(cursor !== null);
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual(['admin', 'k0', 'k1', 'k2', 'k3', 'k4', 'k5']);
  });
});

describe('allowed_domains', () => {
  it('accepts a restricted key only from a matching Origin or Referer', async () => {
    const secret = await svc.ws.key(['viewer'], ['shop.example.com', '*.example.org']);
    const from = async (headers: Record<string, string>) =>
      (await svc.call('GET', '/tenant/apikeys?limit=1', { key: secret, headers })).body?.error_code;
    expect(await from({ origin: 'https://shop.example.com' })).toBe('INSUFFICIENT_SCOPE');
    expect(await from({ origin: 'https://a.b.example.org:8443' })).toBe('INSUFFICIENT_SCOPE');
    expect(await from({ referer: 'https://shop.example.com/cart?x=1' })).toBe('INSUFFICIENT_SCOPE');
    expect(await from({ origin: 'https://evil.com' })).toBe('ORIGIN_NOT_ALLOWED');
    expect(await from({ origin: 'https://example.org' })).toBe('ORIGIN_NOT_ALLOWED');
    expect(await from({})).toBe('ORIGIN_NOT_ALLOWED');
  });
});

describe('caps (issue 23)', () => {
  const create = (key: string, body: unknown) => svc.call('POST', '/tenant/apikeys', { key, body });

  it('refuses a key with more than 50 allowed_domains, naming the limit', async () => {
    const domains = (n: number) => Array.from({ length: n }, (_, i) => `d${i}.example.com`);
    expect(
      (await create(svc.ws.adminKey, { name: 'ok', scopes: ['ingest'], allowed_domains: domains(50) }))
        .status,
    ).toBe(200);
    const res = await create(svc.ws.adminKey, {
      name: 'too many',
      scopes: ['ingest'],
      allowed_domains: domains(51),
    });
    expectError(res, 400, 'VALIDATION_ERROR');
    expect(res.body.message).toMatch(/50/);
    expect(res.body.details.map((d: { path: string }) => d.path)).toContain('/allowed_domains');
  });

  it('refuses the 101st active key of a workspace with 409 naming the limit; a revoked key frees its place', async () => {
    const ws = await svc.newWorkspace('capped');
    // The workspace's admin key is the first of its 100.
    const ids: string[] = [];
    for (let i = 1; i < 100; i++) {
      const res = await create(ws.adminKey, { name: `k${i}`, scopes: ['viewer'] });
      expect(res.status).toBe(200);
      ids.push(res.body.data.id);
    }
    const refused = await create(ws.adminKey, { name: 'one too many', scopes: ['viewer'] });
    expectError(refused, 409, 'CONFLICT');
    expect(refused.body.message).toMatch(/at most 100 active API keys/);

    expect((await svc.call('DELETE', `/tenant/apikeys/${ids[0]}`, { key: ws.adminKey })).status).toBe(200);
    expect((await create(ws.adminKey, { name: 'in its place', scopes: ['viewer'] })).status).toBe(200);
    expectError(await create(ws.adminKey, { name: 'again too many', scopes: ['viewer'] }), 409, 'CONFLICT');
  });

  it('lets a workspace already over the cap keep and use its keys, but not add one', async () => {
    const ws = await svc.newWorkspace('over the cap');
    // Written straight into the table, as a database from before the cap would hold them.
    const secrets = Array.from(
      { length: 120 },
      (_, i) => `cdp_sk_${'a'.repeat(40)}${String(i).padStart(3, '0')}`,
    );
    await svc.rt.deps.db.query(
      `INSERT INTO api_keys (id, workspace_id, name, key_hash, prefix, scopes)
       SELECT 'key_old_' || i, $1::uuid, 'old ' || i, h, 'cdp_sk_aaaa', ARRAY['admin']
       FROM unnest($2::text[]) WITH ORDINALITY AS t(h, i)`,
      [ws.id, secrets.map(hashKey)],
    );
    expect((await svc.call('GET', '/tenant/apikeys?limit=1', { key: secrets[119]! })).status).toBe(200);
    expectError(await create(secrets[0]!, { name: 'more', scopes: ['viewer'] }), 409, 'CONFLICT');
  });
});

describe('the cost of a key that finds nothing (issue 23)', () => {
  const lookups = () => svc.rt.deps.keys.stats().misses;

  it('looks an unknown key up once, however often a client repeats it', async () => {
    const unknown = `cdp_pk_${'U'.repeat(43)}`;
    const before = lookups();
    for (let i = 0; i < 20; i++) {
      expectError(await svc.call('GET', '/tenant/apikeys', { key: unknown }), 401, 'INVALID_TENANT_KEY');
    }
    expect(lookups() - before).toBe(1);
  });

  it('looks a revoked key up once after its revocation, however often a forgotten page still sends it', async () => {
    const created = await svc.call('POST', '/tenant/apikeys', {
      body: { name: 'stale page', scopes: ['admin'] },
    });
    const secret = created.body.data.api_key;
    expect((await svc.call('DELETE', `/tenant/apikeys/${created.body.data.id}`)).status).toBe(200);
    const before = lookups();
    for (let i = 0; i < 20; i++) {
      expectError(await svc.call('GET', '/tenant/apikeys', { key: secret }), 401, 'INVALID_TENANT_KEY');
    }
    expect(lookups() - before).toBe(1);
  });
});
