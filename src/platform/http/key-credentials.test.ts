import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../../../test/expect-error';
import { startTestService, type TestService } from '../../../test/harness';
import { AppError } from '../errors';
import { takeWriteKey } from './key-credentials';

/** The three ways to send a key (docs/api.md, Authentication): X-API-Key, Basic auth, body writeKey. */
let svc: TestService;
let ingestKey: string;
let viewerKey: string;
beforeAll(async () => {
  svc = await startTestService();
  ingestKey = await svc.ws.key(['ingest']);
  viewerKey = await svc.ws.key(['viewer']);
});
afterAll(async () => svc?.close());

const event = (extra: Record<string, unknown> = {}) => ({
  event_type: 'track',
  event_name: 'Product Viewed',
  anonymous_id: randomUUID(),
  ...extra,
});
const basic = (user: string, password = '') =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
const unknownKey = () => `cdp_sk_${randomBytes(32).toString('base64url')}`;

async function storedEvent(id: string) {
  const { rows } = await svc.rt.deps.db.query<{ payload: unknown; api_key_id: string }>(
    'SELECT payload, api_key_id FROM events WHERE id = $1',
    [id],
  );
  return rows[0]!;
}
const keyIdOf = async (raw: string) => (await svc.rt.deps.keys.resolve(raw))!.id;

describe('Basic auth (the key as user name, empty password)', () => {
  it('ingests one event and a batch, recorded under the key', async () => {
    const res = await svc.call('POST', '/api/ingest', {
      key: null,
      headers: { authorization: basic(ingestKey) },
      body: event(),
    });
    expect(res.status, res.text).toBe(202);
    expect(res.headers['ratelimit-limit']).toBeDefined();
    expect((await storedEvent(res.body.event_id)).api_key_id).toBe(await keyIdOf(ingestKey));

    const batch = await svc.call('POST', '/tenant/ingest/batch', {
      key: null,
      headers: { authorization: basic(ingestKey) },
      body: [event(), event()],
    });
    expect(batch.status, batch.text).toBe(202);
    expect(batch.body.count).toBe(2);
  });

  it('refuses with the codes of X-API-Key: unknown 401, wrong scope 403, wrong origin 403', async () => {
    const send = (authorization: string, headers: Record<string, string> = {}) =>
      svc.call('POST', '/api/ingest', { key: null, headers: { authorization, ...headers }, body: event() });
    expectError(await send(basic(unknownKey())), 401, 'INVALID_TENANT_KEY');
    expectError(await send(basic('not-a-key')), 401, 'INVALID_TENANT_KEY');
    expectError(await send(basic(viewerKey)), 403, 'INSUFFICIENT_SCOPE');
    const browserKey = await svc.ws.key(['ingest'], ['shop.example.com']);
    expectError(
      await send(basic(browserKey), { origin: 'https://evil.example.org' }),
      403,
      'ORIGIN_NOT_ALLOWED',
    );
    expect((await send(basic(browserKey), { origin: 'https://shop.example.com' })).status).toBe(202);
  });

  it('refuses a password, a missing colon or broken base64 as an invalid key', async () => {
    for (const authorization of [
      basic(ingestKey, 'secret'),
      `Basic ${Buffer.from(ingestKey).toString('base64')}`,
      'Basic !!!',
      'Basic',
    ]) {
      const res = await svc.call('POST', '/api/ingest', {
        key: null,
        headers: { authorization },
        body: event(),
      });
      expectError(res, 401, 'INVALID_TENANT_KEY');
    }
  });

  it('is a write key: not accepted outside the ingest endpoints', async () => {
    const admin = svc.ws.adminKey;
    const res = await svc.call('GET', '/tenant/apikeys', {
      key: null,
      headers: { authorization: basic(admin) },
    });
    expectError(res, 401, 'MISSING_API_KEY');
  });
});

describe('writeKey in the body', () => {
  it('ingests one event; the key is taken out of the stored event', async () => {
    const res = await svc.call('POST', '/api/ingest', {
      key: null,
      body: event({ writeKey: ingestKey, payload: { sku: 'A1' } }),
    });
    expect(res.status, res.text).toBe(202);
    const stored = await storedEvent(res.body.event_id);
    expect(stored.api_key_id).toBe(await keyIdOf(ingestKey));
    expect(JSON.stringify(stored)).not.toContain(ingestKey);
  });

  it('ingests a batch whose events carry the key', async () => {
    const res = await svc.call('POST', '/tenant/ingest/batch', {
      key: null,
      body: [event({ writeKey: ingestKey }), event({ writeKey: ingestKey }), event()],
    });
    expect(res.status, res.text).toBe(202);
    expect(res.body.count).toBe(3);
    for (const id of res.body.event_ids)
      expect(JSON.stringify(await storedEvent(id))).not.toContain(ingestKey);
  });

  it('never grants more than the key: a viewer key is 403, an unknown key 401', async () => {
    expectError(
      await svc.call('POST', '/api/ingest', { key: null, body: event({ writeKey: viewerKey }) }),
      403,
      'INSUFFICIENT_SCOPE',
    );
    expectError(
      await svc.call('POST', '/tenant/ingest/batch', { key: null, body: [event({ writeKey: viewerKey })] }),
      403,
      'INSUFFICIENT_SCOPE',
    );
    expectError(
      await svc.call('POST', '/api/ingest', { key: null, body: event({ writeKey: unknownKey() }) }),
      401,
      'INVALID_TENANT_KEY',
    );
  });

  it('refuses a batch whose events carry different keys', async () => {
    const other = await svc.ws.key(['ingest']);
    const res = await svc.call('POST', '/tenant/ingest/batch', {
      key: null,
      body: [event({ writeKey: ingestKey }), event({ writeKey: other })],
    });
    expectError(res, 401, 'INVALID_TENANT_KEY');
  });

  it('answers 401 MISSING_API_KEY naming every way when no key is anywhere', async () => {
    const res = await svc.call('POST', '/api/ingest', { key: null, body: event() });
    expectError(res, 401, 'MISSING_API_KEY');
    expect(res.body.message).toBe(
      'X-API-Key header, HTTP Basic user name or writeKey in the body is required',
    );
  });
});

describe('an ingest request without a key in its headers', () => {
  it('is refused before its body is read unless that body is JSON', async () => {
    const res = await svc.call('POST', '/api/ingest', {
      key: null,
      rawBody: 'writeKey=x',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expectError(res, 401, 'MISSING_API_KEY');
  });

  it('has a JSON body parsed to look for writeKey: an unparseable one is 400 INVALID_JSON', async () => {
    const res = await svc.call('POST', '/api/ingest', { key: null, rawBody: '{"writeKey":' });
    expectError(res, 400, 'INVALID_JSON');
  });
});

describe('several credentials in one request', () => {
  it('accepts the same key sent twice', async () => {
    const res = await svc.call('POST', '/api/ingest', {
      key: ingestKey,
      headers: { authorization: basic(ingestKey) },
      body: event({ writeKey: ingestKey }),
    });
    expect(res.status, res.text).toBe(202);
  });

  it('refuses credentials of different keys, and a bad one beside a good one: 401 INVALID_TENANT_KEY', async () => {
    const other = await svc.ws.key(['ingest']);
    const cases = [
      { key: ingestKey, headers: { authorization: basic(other) }, body: event() },
      { key: ingestKey, body: event({ writeKey: other }) },
      { key: null, headers: { authorization: basic(ingestKey) }, body: event({ writeKey: other }) },
      { key: ingestKey, headers: { authorization: basic(unknownKey()) }, body: event() },
    ];
    for (const c of cases) expectError(await svc.call('POST', '/api/ingest', c), 401, 'INVALID_TENANT_KEY');
  });
});

describe('takeWriteKey (unit)', () => {
  const refused = (body: unknown) => {
    try {
      takeWriteKey(body);
      return null;
    } catch (err) {
      return err instanceof AppError ? err.code : 'other';
    }
  };

  it('removes the field from an event or from every item of a batch', () => {
    const one: Record<string, unknown> = { a: 1, writeKey: 'k' };
    expect(takeWriteKey(one)).toBe('k');
    expect(one).toEqual({ a: 1 });
    const many = [{ writeKey: 'k' }, { b: 2 }, { writeKey: 'k' }];
    expect(takeWriteKey(many)).toBe('k');
    expect(many).toEqual([{}, { b: 2 }, {}]);
    expect(takeWriteKey({ a: 1 })).toBeNull();
    expect(takeWriteKey('text')).toBeNull();
    expect(takeWriteKey(null)).toBeNull();
  });

  it('refuses a key that is not one non-empty string', () => {
    expect(refused({ writeKey: 7 })).toBe('INVALID_TENANT_KEY');
    expect(refused({ writeKey: '' })).toBe('INVALID_TENANT_KEY');
    expect(refused([{ writeKey: 'a' }, { writeKey: 'b' }])).toBe('INVALID_TENANT_KEY');
  });
});
