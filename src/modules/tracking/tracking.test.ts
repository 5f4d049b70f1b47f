import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../../../test/harness';
import { readAccount } from '../accounts';
import { waitProcessed } from '../processing/processing.test-kit';
import { TRACKING_LIMITS } from './tracking.body';
import { anonymousIdOf, mapMessage } from './tracking.mapping';

let svc: TestService;
let key: string;
beforeAll(async () => {
  svc = await startTestService();
  key = await svc.ws.key(['ingest']);
});
afterAll(async () => svc?.close());

const basic = (k: string) => `Basic ${Buffer.from(`${k}:`).toString('base64')}`;

interface Sent {
  status: number;
  headers: Record<string, unknown>;
  // biome-ignore lint/suspicious/noExplicitAny: answers are inspected field by field
  body: any;
}

/** A request as the SDKs send it: Basic auth unless told otherwise, any content type, maybe gzip. */
async function send(
  url: string,
  body: unknown,
  opts: { auth?: string | null; type?: string; gzip?: boolean; raw?: Buffer } = {},
): Promise<Sent> {
  const text = Buffer.from(JSON.stringify(body));
  const headers: Record<string, string> = { 'content-type': opts.type ?? 'application/json' };
  if (opts.auth !== null) headers.authorization = opts.auth ?? basic(key);
  if (opts.gzip) headers['content-encoding'] = 'gzip';
  const res = await svc.app.inject({
    method: 'POST',
    url,
    headers,
    payload: opts.raw ?? (opts.gzip ? gzipSync(text) : text),
  });
  return { status: res.statusCode, headers: res.headers, body: res.body ? JSON.parse(res.body) : null };
}

// biome-ignore lint/suspicious/noExplicitAny: rows are inspected field by field
async function eventsOf(where: string, params: unknown[]): Promise<any[]> {
  const { rows } = await svc.rt.deps.db.query(
    `SELECT event_type, event_name, anonymous_id, identity, payload, message_id, occurred_at
       FROM events WHERE workspace_id = $1 AND ${where} ORDER BY seq`,
    [svc.ws.id, ...params],
  );
  return rows;
}

async function profileOf(identity: string) {
  const res = await svc.call('GET', `/tenant/profiles?identity=${encodeURIComponent(identity)}`);
  return res.body.data[0];
}

describe('the Segment message mapping', () => {
  const ctx = { receivedAt: Date.parse('2024-05-01T12:00:00Z'), at: '' };

  it('keeps a UUID anonymous id and turns any other into the same UUIDv5 every time', () => {
    const uuid = randomUUID();
    expect(anonymousIdOf(uuid)).toBe(uuid);
    expect(anonymousIdOf('device-42')).toBe(anonymousIdOf('device-42'));
    expect(anonymousIdOf('device-42')).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
    expect(anonymousIdOf('device-42')).not.toBe(anonymousIdOf('device-43'));
  });

  it('corrects the client clock by the skew its sentAt shows, as Segment does', () => {
    // The device's clock is one hour ahead: it stamped 13:00 and sent at 13:00:05, received 12:00:05.
    const r = mapMessage(
      { event: 'x', userId: 'u', timestamp: '2024-05-01T13:00:00Z', sentAt: '2024-05-01T13:00:05Z' },
      'track',
      { ...ctx, receivedAt: Date.parse('2024-05-01T12:00:05Z') },
    );
    expect(r.ok && r.event.timestamp).toBe('2024-05-01T12:00:00.000Z');
  });

  it('takes originalTimestamp when there is no timestamp, and the time of receipt when neither', () => {
    const r = mapMessage(
      { event: 'x', userId: 'u', originalTimestamp: '2024-04-30T10:00:00Z' },
      'track',
      ctx,
    );
    expect(r.ok && r.event.timestamp).toBe('2024-04-30T10:00:00.000Z');
    const none = mapMessage({ event: 'x', userId: 'u' }, 'track', ctx);
    expect(none.ok && none.event.timestamp).toBe('2024-05-01T12:00:00.000Z');
  });

  it('maps identify traits (context.traits too) and names them as profiles do', () => {
    const r = mapMessage(
      {
        userId: 'u1',
        traits: { firstName: 'Ada', plan: 'pro' },
        context: { traits: { lastName: 'L', plan: 'free' } },
      },
      'identify',
      ctx,
    );
    expect(r.ok && r.event).toMatchObject({
      event_type: 'identify',
      identity: 'u1',
      payload: { first_name: 'Ada', last_name: 'L', plan: 'pro' },
    });
  });

  it("makes Segment's order events orders, and leaves one the order rules would refuse a track event", () => {
    const r = mapMessage(
      {
        userId: 'u',
        event: 'Order Completed',
        properties: {
          order_id: 1001,
          revenue: 25,
          currency: 'eur',
          products: [{ sku: 'mug-1', price: 12.5, quantity: 2, color: 'red' }],
        },
      },
      'track',
      ctx,
    );
    expect(r.ok && r.event).toMatchObject({
      event_type: 'order',
      event_name: 'Order Completed',
      payload: {
        order_id: '1001',
        total: 25,
        currency: 'eur',
        status: 'completed',
        items: [{ product_id: 'mug-1', price: 12.5, quantity: 2, color: 'red' }],
      },
    });
    const refunded = mapMessage(
      { userId: 'u', event: 'Order Refunded', properties: { order_id: 'A', total: 5 } },
      'track',
      ctx,
    );
    expect(refunded.ok && refunded.event.payload).toMatchObject({ status: 'refunded' });
    const noTotal = mapMessage(
      { userId: 'u', event: 'Order Completed', properties: { order_id: 'A' } },
      'track',
      ctx,
    );
    expect(noTotal.ok && noTotal.event).toMatchObject({ event_type: 'track', payload: { order_id: 'A' } });
  });

  it('names what a message lacks, at its place in the batch', () => {
    const r = mapMessage({ type: 'track', userId: 'u' }, null, { ...ctx, at: '/batch/2' });
    expect(r).toEqual({
      ok: false,
      details: [{ path: '/batch/2/event', message: 'a track call needs its event name' }],
    });
    const t = mapMessage({ type: 'bogus' }, null, { ...ctx, at: '/batch/0' });
    expect(!t.ok && t.details[0]!.path).toBe('/batch/0/type');
  });
});

describe('POST /v1/track and the other single calls', () => {
  it('stores a track call sent with Basic auth and answers {"success":true}', async () => {
    const messageId = randomUUID();
    const res = await send('/v1/track', {
      userId: 'user-1',
      anonymousId: 'not-a-uuid',
      event: 'Product Viewed',
      properties: { sku: 'mug-1' },
      messageId,
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true });
    const [ev] = await eventsOf('message_id = $2', [messageId]);
    expect(ev).toMatchObject({
      event_type: 'track',
      event_name: 'Product Viewed',
      identity: 'user-1',
      anonymous_id: anonymousIdOf('not-a-uuid'),
      payload: { sku: 'mug-1' },
    });
  });

  it('takes the key as writeKey in a text/plain body, as browsers send it (short path /v1/p)', async () => {
    const messageId = randomUUID();
    const res = await send(
      '/v1/p',
      {
        anonymousId: randomUUID(),
        name: 'Pricing',
        properties: { path: '/pricing' },
        writeKey: key,
        messageId,
      },
      { auth: null, type: 'text/plain' },
    );
    expect(res.status).toBe(200);
    const [ev] = await eventsOf('message_id = $2', [messageId]);
    expect(ev).toMatchObject({
      event_type: 'page',
      event_name: 'Pricing',
      payload: { path: '/pricing', name: 'Pricing' },
    });
  });

  it('refuses a call without a key (401) and with a key of the wrong scope (403)', async () => {
    expect((await send('/v1/track', { userId: 'u', event: 'x' }, { auth: null })).status).toBe(401);
    const viewer = await svc.ws.key(['viewer']);
    expect((await send('/v1/track', { userId: 'u', event: 'x' }, { auth: basic(viewer) })).status).toBe(403);
  });

  it('answers 400 for a call that cannot be an event, naming the field the client sent', async () => {
    const res = await send('/v1/track', { event: 'x' });
    expect(res.status).toBe(400);
    expect(res.body.error_code).toBe('VALIDATION_ERROR');
    expect(res.body.details[0].path).toBe('/userId');
  });

  it("answers 400 past Segment's 32 KB per call, as Segment does", async () => {
    const res = await send('/v1/track', {
      userId: 'u',
      event: 'x',
      properties: { blob: 'a'.repeat(33 * 1024) },
    });
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/32 KB/);
  });
});

describe('POST /v1/batch', () => {
  it('stores every message of a gzip batch and de-duplicates a resent one by messageId', async () => {
    const anon = randomUUID();
    const ids = [randomUUID(), randomUUID()];
    const body = {
      batch: [
        {
          type: 'identify',
          messageId: ids[0],
          anonymousId: anon,
          userId: 'ada@example.com',
          traits: { firstName: 'Ada' },
        },
        { type: 'track', messageId: ids[1], anonymousId: anon, event: 'Signed Up' },
      ],
      sentAt: new Date().toISOString(),
    };
    expect((await send('/v1/batch', body, { gzip: true })).status).toBe(200);
    expect((await send('/v1/batch', body, { gzip: true })).status).toBe(200);
    expect(await eventsOf('message_id = ANY($2::text[])', [ids])).toHaveLength(2);
  });

  it('stores the valid messages and names the refused ones', async () => {
    const mid = randomUUID();
    const res = await send('/v1/batch', {
      batch: [
        { type: 'track', userId: 'u', event: 'ok', messageId: mid },
        { type: 'track', event: 'no id' },
      ],
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      refused: [{ path: '/batch/1/userId', message: expect.any(String) }],
    });
    expect(await eventsOf('message_id = $2', [mid])).toHaveLength(1);
  });

  it('answers 400 and stores nothing past 500 KB or with a message over 32 KB, as Segment does', async () => {
    const big = (n: number) => ({
      type: 'track',
      userId: 'u',
      event: 'x',
      properties: { blob: 'a'.repeat(n) },
    });
    const over = await send('/v1/batch', { batch: Array.from({ length: 20 }, () => big(30 * 1024)) });
    expect(over.status).toBe(400);
    const one = await send('/v1/batch', { batch: [big(10), big(40 * 1024)] });
    expect(one.status).toBe(400);
    expect(one.body.details).toEqual([{ path: '/batch/1', message: expect.stringMatching(/32768/) }]);
  });

  it('stops inflating a gzip body at the limit (a zip bomb is a 400, not memory)', async () => {
    const bomb = gzipSync(Buffer.alloc(50 * 1024 * 1024, 0x20));
    expect(bomb.length).toBeLessThan(TRACKING_LIMITS.batchBytes);
    const res = await send('/v1/batch', null, { gzip: true, raw: bomb });
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/500 KB/);
  });

  it('counts each message against the batch rate tier and answers 429 with Retry-After', async () => {
    const ws = await svc.newWorkspace('limited');
    await svc.call('PATCH', '/tenant/settings', {
      key: ws.adminKey,
      body: { rate_limits: { batch_events_per_minute: 3 } },
    });
    const k = await ws.key(['ingest']);
    const msg = () => ({ type: 'track', userId: 'u', event: 'x' });
    expect((await send('/v1/batch', { batch: [msg(), msg(), msg()] }, { auth: basic(k) })).status).toBe(200);
    const res = await send('/v1/batch', { batch: [msg()] }, { auth: basic(k) });
    expect(res.status).toBe(429);
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
  });
});

describe('what the calls come to in profiles', () => {
  it('identify, track, group and alias: traits, the account and a merge', async () => {
    const visitor = randomUUID();
    const later = 'legacy-device-7';
    const user = `grace-${randomUUID()}@example.com`;
    const group = `acme-${randomUUID()}`;
    await send('/v1/batch', {
      batch: [
        { type: 'page', anonymousId: visitor, name: 'Home' },
        {
          type: 'identify',
          anonymousId: visitor,
          userId: user,
          traits: { firstName: 'Grace', lastName: 'Hopper', plan: 'pro' },
        },
        { type: 'group', userId: user, groupId: group, traits: { name: 'Acme', employees: 10 } },
        { type: 'track', anonymousId: later, event: 'Opened App' },
        { type: 'alias', userId: user, previousId: later },
      ],
    });
    await waitProcessed(svc.rt.deps.db);
    const p = await profileOf(user);
    expect(p).toMatchObject({
      email: user,
      first_name: 'Grace',
      last_name: 'Hopper',
      attributes: { plan: 'pro' },
    });
    const full = (await svc.call('GET', `/tenant/profiles/${p.id}`)).body.data;
    expect(full.identities).toEqual(
      expect.arrayContaining([
        { type: 'anonymous_id', value: visitor },
        { type: 'anonymous_id', value: anonymousIdOf(later) },
      ]),
    );
    expect((await readAccount(svc.rt.deps.db, svc.ws.id, group))?.traits).toEqual({
      name: 'Acme',
      employees: 10,
    });
  });

  it('keeps the newer traits of an account whatever the order the group calls arrive in', async () => {
    const group = `g-${randomUUID()}`;
    const call = (plan: string, at: string) => ({
      userId: 'u',
      groupId: group,
      traits: { plan },
      timestamp: at,
    });
    await send('/v1/group', call('new', '2024-05-02T00:00:00Z'));
    await send('/v1/g', call('old', '2024-05-01T00:00:00Z'));
    expect((await readAccount(svc.rt.deps.db, svc.ws.id, group))?.traits).toEqual({ plan: 'new' });
  });
});

describe('settings documents and CORS for the browser libraries', () => {
  it("serves analytics-next's settings, pointing it back at this service only", async () => {
    const pk = await svc.ws.key(['ingest'], ['shop.example.com']);
    const res = await svc.app.inject({
      method: 'GET',
      url: `/v1/projects/${pk}/settings`,
      headers: { origin: 'https://shop.example.com', host: 'cdp.example.com' },
    });
    expect(res.statusCode).toBe(200);
    const doc = JSON.parse(res.body);
    expect(doc.integrations).toEqual({
      'Segment.io': expect.objectContaining({ apiKey: pk, apiHost: 'cdp.example.com/v1' }),
    });
    expect(doc.remotePlugins).toEqual([]);
    // Public like Segment's: it holds nothing the page lacks; the calls it leads to are checked.
    expect(res.headers['access-control-allow-origin']).toBe('*');
  });

  it("serves RudderStack's sourceConfig with no destinations", async () => {
    const res = await svc.app.inject({ method: 'GET', url: `/sourceConfig/?p=npm&v=3&writeKey=${key}` });
    expect(res.statusCode).toBe(200);
    expect(JSON.parse(res.body).source).toMatchObject({ enabled: true, destinations: [] });
    expect((await svc.app.inject({ method: 'GET', url: '/sourceConfig/?writeKey=nope' })).statusCode).toBe(
      401,
    );
    // The library sends its key as Basic auth too: the header is then the one checked.
    const both = await svc.app.inject({
      method: 'GET',
      url: '/sourceConfig/?writeKey=nope',
      headers: { authorization: basic(key) },
    });
    expect(both.statusCode).toBe(200);
  });

  it('answers a preflight from an allowed origin echoing the headers it asks for', async () => {
    // Through the API: the process's origin index learns the key's domains from its own writes.
    const created = await svc.call('POST', '/tenant/apikeys', {
      body: { name: 'browser', scopes: ['ingest'], allowed_domains: ['app.example.org'] },
    });
    expect(created.status).toBe(200);
    const res = await svc.app.inject({
      method: 'OPTIONS',
      url: '/v1/t',
      headers: {
        origin: 'https://app.example.org',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization,content-type,x-retry-count',
      },
    });
    expect(res.statusCode).toBe(204);
    expect(res.headers['access-control-allow-headers']).toBe('authorization,content-type,x-retry-count');
    const refused = await svc.app.inject({
      method: 'OPTIONS',
      url: '/v1/t',
      headers: { origin: 'https://other.example.org', 'access-control-request-method': 'POST' },
    });
    expect(refused.statusCode).toBe(403);
  });
});
