import { createHmac } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService, type TestWorkspace } from '../../../test/harness';
import { waitUntil } from '../../../test/wait';
import { waitSegmentsSettled } from '../segments/segments.test-kit';
import { webhookPolicy } from './policy';
import {
  identifyNew,
  listDeliveries,
  type Received,
  type Receiver,
  startReceiver,
  subscribeTo,
  verifyServiceSignature,
  verifyStandardWebhook,
} from './webhooks.test-kit';

/** Secret rotation, test sends and segment filters (docs/webhooks.md), against receivers on 127.0.0.1. */

// Short retries, set before the service registers its queues.
webhookPolicy.backoff = { baseMs: 50, capMs: 200 };

let svc: TestService;
let rx: Receiver;

beforeAll(async () => {
  [svc, rx] = await Promise.all([startTestService({ CDP_ALLOW_PRIVATE_WEBHOOKS: '1' }), startReceiver()]);
});

afterAll(async () => {
  await Promise.all([svc?.close(), rx?.close()]);
});

interface Hook {
  id: string;
  secret: string;
  segments: string[];
  previous_secret_expires_at: string | null;
  enabled: boolean;
}

const subscribe = (ws: TestWorkspace, path: string, extra: Record<string, unknown> = {}) =>
  subscribeTo<Hook>(svc, rx, ws, path, extra);

async function rotate(ws: TestWorkspace, hookId: string, body?: Record<string, unknown>): Promise<Hook> {
  const res = await svc.call('POST', `/tenant/webhooks/${hookId}/rotate-secret`, { key: ws.adminKey, body });
  expect(res.status, res.text).toBe(200);
  return res.body.data;
}

async function testSend(ws: TestWorkspace, hookId: string) {
  return svc.call('POST', `/tenant/webhooks/${hookId}/test`, { key: ws.adminKey });
}

const identify = (ws: TestWorkspace, payload?: Record<string, unknown>) => identifyNew(svc, ws, payload);
const deliveriesOf = (ws: TestWorkspace, hookId: string) => listDeliveries(svc, ws, hookId);

const headersOf = (r: Received) =>
  Object.fromEntries(Object.entries(r.headers).map(([k, v]) => [k, String(v)]));

/** The standardwebhooks npm library's verdict on a received request, given one secret. */
function libraryAccepts(secret: string, r: Received): boolean {
  try {
    new Webhook(secret).verify(r.body, headersOf(r));
    return true;
  } catch {
    return false;
  }
}

const hexHmac = (secret: string, body: string) => createHmac('sha256', secret).update(body).digest('hex');

/** A port on 127.0.0.1 nothing listens on (bound, then closed). */
async function closedPort(): Promise<number> {
  const s = http.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise((r) => s.close(r));
  return port;
}

describe('secret rotation', () => {
  it('answers the new secret and when the old one stops signing, 24 h from now by default', async () => {
    const ws = await svc.newWorkspace();
    const hook = await subscribe(ws, '/rotate-answer');
    expect(hook.previous_secret_expires_at).toBeNull();
    const rotated = await rotate(ws, hook.id);
    expect(rotated.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(rotated.secret).not.toBe(hook.secret);
    const expires = Date.parse(rotated.previous_secret_expires_at!);
    expect(Math.abs(expires - (Date.now() + 86_400_000))).toBeLessThan(60_000);
    // Reading the subscription back shows the same (the secret is shown to admins, like at creation).
    const read = await svc.call('GET', `/tenant/webhooks/${hook.id}`, { key: ws.adminKey });
    expect(read.body.data).toMatchObject({
      secret: rotated.secret,
      previous_secret_expires_at: rotated.previous_secret_expires_at,
    });
  });

  it('signs a delivery during the grace period so both the old and the new secret verify it', async () => {
    const ws = await svc.newWorkspace();
    const hook = await subscribe(ws, '/rotate-grace');
    const rotated = await rotate(ws, hook.id, { grace_seconds: 3600 });
    await identify(ws);
    const [got] = await rx.waitFor('/rotate-grace', 1);
    // X-Service-Signature: the new secret's; X-Service-Signature-Previous: the old one's.
    expect(verifyServiceSignature(rotated.secret, got!)).toBe(true);
    expect(got!.headers['x-service-signature-previous']).toBe(hexHmac(hook.secret, got!.body));
    // webhook-signature carries one v1 signature per secret; a verifier accepts either.
    expect(String(got!.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(verifyStandardWebhook(hook.secret, got!)).toBe(true);
    expect(verifyStandardWebhook(rotated.secret, got!)).toBe(true);
    expect(libraryAccepts(hook.secret, got!)).toBe(true);
    expect(libraryAccepts(rotated.secret, got!)).toBe(true);
    expect(libraryAccepts(`whsec_${Buffer.alloc(32, 7).toString('base64')}`, got!)).toBe(false);
  });

  it('signs with the new secret only once the grace period is over', async () => {
    const ws = await svc.newWorkspace();
    const hook = await subscribe(ws, '/rotate-after');
    const rotated = await rotate(ws, hook.id, { grace_seconds: 1 });
    // The grace period ends by the database's clock, when the subscription says it has.
    await waitUntil(
      async () =>
        (await svc.call('GET', `/tenant/webhooks/${hook.id}`, { key: ws.adminKey })).body.data
          .previous_secret_expires_at === null,
      { what: 'the 1 s grace period to end', timeoutMs: 5_000, intervalMs: 100 },
    );
    await identify(ws);
    const [got] = await rx.waitFor('/rotate-after', 1);
    expect(verifyServiceSignature(rotated.secret, got!)).toBe(true);
    expect(verifyServiceSignature(hook.secret, got!)).toBe(false);
    expect(got!.headers['x-service-signature-previous']).toBeUndefined();
    expect(String(got!.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(libraryAccepts(rotated.secret, got!)).toBe(true);
    expect(libraryAccepts(hook.secret, got!)).toBe(false);
  });

  it('keeps only the two latest secrets when rotated again during a grace period', async () => {
    const ws = await svc.newWorkspace();
    const first = await subscribe(ws, '/rotate-twice');
    const second = await rotate(ws, first.id);
    const chosen = `whsec_${Buffer.alloc(24, 9).toString('base64')}`;
    const third = await rotate(ws, first.id, { secret: chosen, grace_seconds: 600 });
    expect(third.secret).toBe(chosen);
    expect(Date.parse(third.previous_secret_expires_at!)).toBeLessThan(Date.now() + 601_000);
    const res = await testSend(ws, first.id);
    expect(res.body.data.delivered, res.text).toBe(true);
    const [got] = await rx.waitFor('/rotate-twice', 1);
    expect(verifyServiceSignature(chosen, got!)).toBe(true);
    expect(got!.headers['x-service-signature-previous']).toBe(hexHmac(second.secret, got!.body));
    expect(libraryAccepts(chosen, got!)).toBe(true);
    expect(libraryAccepts(second.secret, got!)).toBe(true);
    expect(libraryAccepts(first.secret, got!)).toBe(false);
  });

  it('ends the grace period at once with grace_seconds 0, and when a PATCH sets the secret', async () => {
    const ws = await svc.newWorkspace();
    const hook = await subscribe(ws, '/rotate-now');
    expect((await rotate(ws, hook.id, { grace_seconds: 0 })).previous_secret_expires_at).toBeNull();
    expect((await rotate(ws, hook.id)).previous_secret_expires_at).not.toBeNull();
    const patched = await svc.call('PATCH', `/tenant/webhooks/${hook.id}`, {
      key: ws.adminKey,
      body: { secret: 'a-plain-secret-of-my-own' },
    });
    expect(patched.body.data).toMatchObject({
      secret: 'a-plain-secret-of-my-own',
      previous_secret_expires_at: null,
    });
    await testSend(ws, hook.id);
    const [got] = await rx.waitFor('/rotate-now', 1);
    expect(got!.headers['x-service-signature-previous']).toBeUndefined();
    expect(verifyServiceSignature('a-plain-secret-of-my-own', got!)).toBe(true);
  });

  it('refuses a malformed secret, a grace beyond 7 days and another workspace’s subscription', async () => {
    const ws = await svc.newWorkspace();
    const other = await svc.newWorkspace();
    const hook = await subscribe(ws, '/rotate-bad');
    const url = `/tenant/webhooks/${hook.id}/rotate-secret`;
    const call = (body: unknown, key = ws.adminKey) => svc.call('POST', url, { key, body });
    expect((await call({ secret: 'whsec_not*base64*at*all' })).status).toBe(400);
    expect((await call({ secret: 'short' })).status).toBe(400);
    expect((await call({ grace_seconds: 604_801 })).status).toBe(400);
    expect((await call({ grace_seconds: -1 })).status).toBe(400);
    expect((await call({ extra: true })).status).toBe(400);
    expect((await call({}, other.adminKey)).status).toBe(404);
    const editor = await ws.key(['editor']);
    expect((await call({}, editor)).status).toBe(403);
    // Nothing refused changed the secret.
    const read = await svc.call('GET', `/tenant/webhooks/${hook.id}`, { key: ws.adminKey });
    expect(read.body.data.secret).toBe(hook.secret);
  });
});

describe('test sends', () => {
  it('sends a signed webhook.test event to a healthy receiver and reports it delivered', async () => {
    const ws = await svc.newWorkspace();
    const hook = await subscribe(ws, '/test-ok');
    const res = await testSend(ws, hook.id);
    expect(res.status, res.text).toBe(200);
    expect(res.body.data).toMatchObject({ delivered: true, status_code: 200, error: null });
    expect(res.body.data.duration_ms).toBeGreaterThanOrEqual(0);
    const [got] = await rx.waitFor('/test-ok', 1);
    const body = JSON.parse(got!.body);
    expect(Object.keys(body).sort()).toEqual(['created_at', 'data', 'id', 'type', 'workspace_id']);
    expect(body).toMatchObject({
      type: 'webhook.test',
      workspace_id: ws.id,
      data: { subscription_id: hook.id },
    });
    expect(body.data.message).toBeTypeOf('string');
    expect(got!.headers['x-service-event']).toBe('webhook.test');
    expect(got!.headers['x-service-delivery']).toBe(got!.headers['webhook-id']);
    expect(verifyServiceSignature(hook.secret, got!)).toBe(true);
    expect(verifyStandardWebhook(hook.secret, got!)).toBe(true);
    expect(new Webhook(hook.secret).verify(got!.body, headersOf(got!))).toEqual(body);
    // Not a delivery: nothing is listed.
    expect(await deliveriesOf(ws, hook.id)).toEqual([]);
  });

  it('reports a receiver answering 500 as not delivered, with its status, and does not retry', async () => {
    const ws = await svc.newWorkspace();
    rx.script('/test-500', [{ status: 500 }]);
    const hook = await subscribe(ws, '/test-500');
    const res = await testSend(ws, hook.id);
    expect(res.status, res.text).toBe(200);
    expect(res.body.data).toMatchObject({ delivered: false, status_code: 500, error: 'HTTP 500' });
    // The answer came after the one request; nothing was stored from which a retry could come later:
    // no delivery, no job.
    expect(rx.received.filter((r) => r.path === '/test-500')).toHaveLength(1);
    expect(await deliveriesOf(ws, hook.id)).toEqual([]);
    // (The webhook queues': the hourly retention plan may queue a sweep of any workspace meanwhile.)
    const jobs = await svc.rt.deps.db.query(
      "SELECT id FROM jobs WHERE workspace_id = $1 AND queue LIKE 'webhooks.%'",
      [ws.id],
    );
    expect(jobs.rows).toEqual([]);
  });

  it('leaves the subscription enabled when a test send is answered 410 Gone', async () => {
    const ws = await svc.newWorkspace();
    rx.script('/test-410', [{ status: 410 }]);
    const hook = await subscribe(ws, '/test-410');
    const res = await testSend(ws, hook.id);
    expect(res.body.data, res.text).toMatchObject({ delivered: false, status_code: 410 });
    const read = await svc.call('GET', `/tenant/webhooks/${hook.id}`, { key: ws.adminKey });
    expect(read.body.data).toMatchObject({ enabled: true, disabled_reason: null });
  });

  it('reports a closed port as not delivered, with the connection error', async () => {
    const ws = await svc.newWorkspace();
    const res = await svc.call('POST', '/tenant/webhooks', {
      key: ws.adminKey,
      body: { url: `http://127.0.0.1:${await closedPort()}/closed`, events: ['profile.created'] },
    });
    const out = await testSend(ws, res.body.data.id);
    expect(out.status, out.text).toBe(200);
    expect(out.body.data).toMatchObject({ delivered: false, status_code: null });
    expect(out.body.data.error).toMatch(/^ECONNREFUSED/);
  });

  it('reports a receiver that hangs past the timeout as not delivered, never as a server error', async () => {
    const ws = await svc.newWorkspace();
    const hanging = http.createServer(() => {});
    await new Promise<void>((r) => hanging.listen(0, '127.0.0.1', r));
    const { port } = hanging.address() as AddressInfo;
    const timeoutMs = webhookPolicy.timeoutMs;
    webhookPolicy.timeoutMs = 300;
    try {
      const res = await svc.call('POST', '/tenant/webhooks', {
        key: ws.adminKey,
        body: { url: `http://127.0.0.1:${port}/hang`, events: ['profile.created'] },
      });
      const out = await testSend(ws, res.body.data.id);
      expect(out.status, out.text).toBe(200);
      expect(out.body.data).toMatchObject({
        delivered: false,
        status_code: null,
        error: 'timeout after 300 ms',
      });
    } finally {
      webhookPolicy.timeoutMs = timeoutMs;
      hanging.closeAllConnections();
      await new Promise((r) => hanging.close(r));
    }
  });

  it('sends to a disabled subscription too, so a receiver can be checked before re-enabling', async () => {
    const ws = await svc.newWorkspace();
    const hook = await subscribe(ws, '/test-disabled');
    await svc.call('PATCH', `/tenant/webhooks/${hook.id}`, { key: ws.adminKey, body: { enabled: false } });
    const res = await testSend(ws, hook.id);
    expect(res.body.data, res.text).toMatchObject({ delivered: true, status_code: 200 });
    await rx.waitFor('/test-disabled', 1);
  });

  it('allows 10 test sends per subscription per minute, then answers 429 with Retry-After', async () => {
    const ws = await svc.newWorkspace();
    const hook = await subscribe(ws, '/test-limit');
    for (let i = 0; i < 10; i++) expect((await testSend(ws, hook.id)).status).toBe(200);
    const refused = await testSend(ws, hook.id);
    expect(refused.status, refused.text).toBe(429);
    expect(refused.body.error_code).toBe('RATE_LIMITED');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    // Another subscription has its own budget.
    const next = await subscribe(ws, '/test-limit');
    expect((await testSend(ws, next.id)).status).toBe(200);
  });

  it('answers 404 for another workspace’s subscription and sends nothing', async () => {
    const ws = await svc.newWorkspace();
    const other = await svc.newWorkspace();
    const hook = await subscribe(ws, '/test-foreign');
    expect((await testSend(other, hook.id)).status).toBe(404);
    expect(rx.received.filter((r) => r.path === '/test-foreign')).toHaveLength(0);
  });
});

describe('segment filters', () => {
  async function saveSegment(ws: TestWorkspace, name: string, tier: string): Promise<string> {
    const res = await svc.call('POST', '/tenant/segments', {
      key: ws.adminKey,
      body: { name, query: { attribute: 'tier', op: 'eq', value: tier } },
    });
    expect(res.status, res.text).toBe(200);
    return res.body.data.id;
  }

  it('delivers segment.entered of the chosen segment only, while other kinds pass unfiltered', async () => {
    const ws = await svc.newWorkspace();
    const gold = await saveSegment(ws, 'gold', 'gold');
    const silver = await saveSegment(ws, 'silver', 'silver');
    await waitSegmentsSettled(svc.rt.deps.db);
    const filtered = await subscribe(ws, '/seg-gold', {
      events: ['segment.entered', 'profile.created'],
      segments: [gold],
    });
    expect(filtered.segments).toEqual([gold]);
    const everything = await subscribe(ws, '/seg-all', { events: ['segment.entered'] });
    expect(everything.segments).toEqual([]);
    await identify(ws, { tier: 'gold' });
    await identify(ws, { tier: 'silver' });
    // The unfiltered subscription gets both entries; the fan-out that made its deliveries made the
    // filtered one's in the same transaction.
    const all = await rx.waitFor('/seg-all', 2, 30_000);
    expect(new Set(all.map((r) => JSON.parse(r.body).data.segment_id))).toEqual(new Set([gold, silver]));
    const listed = await deliveriesOf(ws, filtered.id);
    const kinds = listed.map((d) => d.event_type).sort();
    expect(kinds).toEqual(['profile.created', 'profile.created', 'segment.entered']);
    const got = await rx.waitFor('/seg-gold', 3);
    const entered = got.map((r) => JSON.parse(r.body)).filter((b) => b.type === 'segment.entered');
    expect(entered).toHaveLength(1);
    expect(entered[0].data.segment_id).toBe(gold);
  }, 60_000);

  it('refuses an unknown segment or another workspace’s: 404 NOT_FOUND naming its position', async () => {
    const ws = await svc.newWorkspace();
    const other = await svc.newWorkspace();
    const mine = await saveSegment(ws, 'mine', 'x');
    const theirs = await saveSegment(other, 'theirs', 'x');
    for (const segments of [
      [mine, 'seg_nope'],
      [mine, theirs],
    ]) {
      const res = await svc.call('POST', '/tenant/webhooks', {
        key: ws.adminKey,
        body: { url: `${rx.url}/seg-bad`, events: ['segment.exited'], segments },
      });
      expect(res.status, res.text).toBe(404);
      expect(res.body).toMatchObject({ error_code: 'NOT_FOUND', details: [{ path: '/segments/1' }] });
    }
    expect((await svc.call('GET', '/tenant/webhooks', { key: ws.adminKey })).body.data).toEqual([]);
  });

  it('refuses more than 100 segments and a repeated one: 400 VALIDATION_ERROR', async () => {
    const ws = await svc.newWorkspace();
    const many = Array.from({ length: 101 }, (_, i) => `seg_${i}`);
    for (const segments of [many, ['seg_a', 'seg_a'], ['']]) {
      const res = await svc.call('POST', '/tenant/webhooks', {
        key: ws.adminKey,
        body: { url: `${rx.url}/seg-bad`, events: ['segment.exited'], segments },
      });
      expect(res.status, res.text).toBe(400);
      expect(res.body.error_code).toBe('VALIDATION_ERROR');
    }
  });

  it('changes the filter with a PATCH, checking the segments, and clears it with []', async () => {
    const ws = await svc.newWorkspace();
    const seg = await saveSegment(ws, 'p', 'p');
    const hook = await subscribe(ws, '/seg-patch', { events: ['segment.entered'] });
    const patch = (segments: string[]) =>
      svc.call('PATCH', `/tenant/webhooks/${hook.id}`, { key: ws.adminKey, body: { segments } });
    expect((await patch([seg])).body.data.segments).toEqual([seg]);
    const bad = await patch(['seg_nope']);
    expect(bad.status, bad.text).toBe(404);
    expect(bad.body.details).toEqual([{ path: '/segments/0', message: 'segment not found' }]);
    expect((await patch([])).body.data.segments).toEqual([]);
  });
});
