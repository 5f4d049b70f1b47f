import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../../../test/harness';

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
