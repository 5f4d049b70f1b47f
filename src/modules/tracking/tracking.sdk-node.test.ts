import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import RudderAnalytics from '@rudderstack/rudder-sdk-node';
import { Analytics } from '@segment/analytics-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../../../test/harness';
import { waitUntil } from '../../../test/wait';
import { readAccount } from '../accounts';
import { waitProcessed } from '../processing/processing.test-kit';
import { anonymousIdOf } from './tracking.mapping';

/**
 * The official Node clients of Segment and RudderStack, unchanged but for their host, with an
 * ingest key as their write key, against the running service: what they send becomes events, and
 * the events become profiles with the right traits, identifiers, merges and accounts.
 */
let svc: TestService;
let url: string;
let key: string;
beforeAll(async () => {
  svc = await startTestService();
  await svc.app.listen({ port: 0, host: '127.0.0.1' });
  url = `http://127.0.0.1:${(svc.app.server.address() as AddressInfo).port}`;
  key = await svc.ws.key(['ingest']);
});
afterAll(async () => svc?.close());

// biome-ignore lint/suspicious/noExplicitAny: profiles are inspected field by field
async function profileOf(identity: string): Promise<any> {
  const list = await svc.call('GET', `/tenant/profiles?identity=${encodeURIComponent(identity)}`);
  const id = list.body.data[0]?.id;
  return id ? (await svc.call('GET', `/tenant/profiles/${id}`)).body.data : null;
}

async function countEvents(where: string, params: unknown[]): Promise<number> {
  const { rows } = await svc.rt.deps.db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM events WHERE workspace_id = $1 AND ${where}`,
    [svc.ws.id, ...params],
  );
  return rows[0]!.n;
}

/** The events of a person, by name, as the worker applied them. */
const eventNames = async (profileId: string): Promise<string[]> =>
  (await svc.call('GET', `/tenant/profiles/${profileId}/events`)).body.data.map(
    (e: { event_name: string }) => e.event_name,
  );

describe('@segment/analytics-node', () => {
  it('identify, track, page, group and alias become one profile with its traits, account and merge', async () => {
    const analytics = new Analytics({ writeKey: key, host: url, flushAt: 3, flushInterval: 50 });
    const user = `ada-${randomUUID()}@example.com`;
    const visitor = randomUUID();
    const device = `device-${randomUUID()}`; // not a UUID: a server library may send any string
    const group = `acme-${randomUUID()}`;
    const failures: unknown[] = [];
    analytics.on('error', (e) => failures.push(e));

    analytics.page({ anonymousId: visitor, name: 'Pricing', properties: { path: '/pricing' } });
    analytics.identify({
      anonymousId: visitor,
      userId: user,
      traits: { firstName: 'Ada', lastName: 'Lovelace', plan: 'pro' },
    });
    analytics.track({ userId: user, event: 'Order Placed', properties: { total: 25 } });
    analytics.track({
      userId: user,
      event: 'Order Completed',
      properties: {
        order_id: `A-${randomUUID()}`,
        total: 25,
        products: [{ sku: 'mug-1', price: 12.5, quantity: 2 }],
      },
    });
    analytics.group({ userId: user, groupId: group, traits: { name: 'Acme', seats: 12 } });
    analytics.track({ anonymousId: device, event: 'Opened App' });
    analytics.alias({ userId: user, previousId: device });
    await analytics.closeAndFlush({ timeout: 10_000 });
    expect(failures).toEqual([]);

    await waitProcessed(svc.rt.deps.db);
    const p = await profileOf(user);
    expect(p).toMatchObject({
      email: user,
      first_name: 'Ada',
      last_name: 'Lovelace',
      attributes: { plan: 'pro' },
      total_spend: 25, // the Order Completed, an order; "Order Placed" is only a track event
    });
    expect(p.identities).toEqual(
      expect.arrayContaining([
        { type: 'email', value: user },
        { type: 'anonymous_id', value: visitor },
        { type: 'anonymous_id', value: anonymousIdOf(device) },
      ]),
    );
    expect(await eventNames(p.id)).toEqual(
      expect.arrayContaining([
        'Pricing',
        'Identify',
        'Order Placed',
        'Order Completed',
        'Group',
        'Opened App',
        'Alias',
      ]),
    );
    expect((await readAccount(svc.rt.deps.db, svc.ws.id, group))?.traits).toEqual({
      name: 'Acme',
      seats: 12,
    });
  });

  it('retries a batch whose connection dropped after it was stored, and the retry stores nothing twice', async () => {
    // A proxy that forwards the first request, lets the service answer it (so the events are
    // stored), then drops the client's connection instead of relaying the answer.
    let requests = 0;
    const seenIds: string[][] = [];
    const proxy = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        requests++;
        const n = requests;
        seenIds.push(JSON.parse(body.toString()).batch.map((m: { messageId: string }) => m.messageId));
        const up = http.request(
          `${url}${req.url}`,
          { method: req.method, headers: req.headers },
          (answer) => {
            const parts: Buffer[] = [];
            answer.on('data', (c: Buffer) => parts.push(c));
            answer.on('end', () => {
              if (n === 1) {
                req.socket.destroy();
                return;
              }
              res.writeHead(answer.statusCode ?? 502, answer.headers);
              res.end(Buffer.concat(parts));
            });
          },
        );
        up.end(body);
      });
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    try {
      const analytics = new Analytics({
        writeKey: key,
        host: proxyUrl,
        flushAt: 2,
        flushInterval: 50,
        maxRetries: 3,
      });
      const anon = randomUUID();
      analytics.track({ anonymousId: anon, event: 'Retried One' });
      analytics.track({ anonymousId: anon, event: 'Retried Two' });
      await analytics.closeAndFlush({ timeout: 10_000 });
      expect(requests).toBeGreaterThanOrEqual(2);
      expect(seenIds[1]).toEqual(seenIds[0]); // the same messages, resent
      expect(await countEvents('anonymous_id = $2', [anon])).toBe(2);
    } finally {
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    }
  });
});

describe('@rudderstack/rudder-sdk-node', () => {
  it('sends gzip batches that become a profile with traits, an account and a merge', async () => {
    const client = new RudderAnalytics(key, {
      dataPlaneUrl: url,
      flushAt: 20,
      flushInterval: 50,
      logLevel: 'error',
    });
    const user = `user-${randomUUID()}`;
    const visitor = randomUUID();
    const other = randomUUID();
    const group = `team-${randomUUID()}`;
    client.identify({
      anonymousId: visitor,
      userId: user,
      traits: { firstName: 'Linus', email: 'linus@example.com' },
    });
    client.track({ userId: user, event: 'Trial Started', properties: { days: 14 } });
    client.page({ userId: user, name: 'Docs', properties: { path: '/docs' } });
    client.group({ userId: user, groupId: group, traits: { name: 'Kernel' } });
    client.track({ anonymousId: other, event: 'Viewed Docs' });
    client.alias({ userId: user, previousId: other });
    await client.flush();

    await waitUntil(async () => (await countEvents('identity = $2', [user])) >= 5, {
      what: 'the batch to be stored',
    });
    await waitProcessed(svc.rt.deps.db);
    const p = await profileOf(user);
    expect(p).toMatchObject({ email: 'linus@example.com', first_name: 'Linus' });
    expect(p.identities).toEqual(
      expect.arrayContaining([
        { type: 'external_id', value: user },
        { type: 'anonymous_id', value: visitor },
        { type: 'anonymous_id', value: other },
      ]),
    );
    expect(await eventNames(p.id)).toEqual(
      expect.arrayContaining(['Trial Started', 'Docs', 'Viewed Docs', 'Alias']),
    );
    expect((await readAccount(svc.rt.deps.db, svc.ws.id, group))?.traits).toEqual({ name: 'Kernel' });
  });
});
