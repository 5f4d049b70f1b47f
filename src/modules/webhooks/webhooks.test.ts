import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService, type TestWorkspace } from '../../../test/harness';
import { waitUntil } from '../../../test/wait';
import { waitProcessed } from '../processing/processing.test-kit';
import { webhookPolicy } from './policy';
import {
  identifyNew,
  listDeliveries,
  type Receiver,
  startReceiver,
  subscribeTo,
  verifyServiceSignature,
  verifyStandardWebhook,
} from './webhooks.test-kit';

// Short retries, set before the service registers its queues.
webhookPolicy.backoff = { baseMs: 50, capMs: 200 };
// Only the pump fans out here (the schedule's safety net never fires during the tests): these tests
// are also the pump's.
webhookPolicy.fanoutEvery = 'every 1h';

let svc: TestService;
let rx: Receiver;

beforeAll(async () => {
  [svc, rx] = await Promise.all([startTestService({ CDP_ALLOW_PRIVATE_WEBHOOKS: '1' }), startReceiver()]);
});

afterAll(async () => {
  await Promise.all([svc?.close(), rx?.close()]);
});

const subscribe = (ws: TestWorkspace, path: string, extra: Record<string, unknown> = {}) =>
  subscribeTo(svc, rx, ws, path, extra);
const identify = (ws: TestWorkspace) => identifyNew(svc, ws);
const deliveriesOf = (ws: TestWorkspace, hookId: string) => listDeliveries(svc, ws, hookId);

/** Reads until `ok` holds and answers what it read; a failure shows the last thing read. */
async function until<T>(
  what: string,
  read: () => Promise<T>,
  ok: (v: T) => boolean,
  timeoutMs = 15_000,
): Promise<T> {
  let last: T | undefined;
  await waitUntil(
    async () => {
      last = await read();
      return ok(last);
    },
    {
      what,
      timeoutMs,
      intervalMs: 100,
      detail: () => last,
    },
  );
  return last as T;
}

describe('webhook subscriptions', () => {
  it('generates a whsec_ secret that admins can read back, and lists, patches and deletes', async () => {
    const ws = await svc.newWorkspace();
    const hook = await subscribe(ws, '/crud');
    expect(hook.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(
      (await svc.call('GET', `/tenant/webhooks/${hook.id}`, { key: ws.adminKey })).body.data.secret,
    ).toBe(hook.secret);
    const list = await svc.call('GET', '/tenant/webhooks', { key: ws.adminKey });
    expect(list.body.data.map((h: { id: string }) => h.id)).toEqual([hook.id]);
    const patched = await svc.call('PATCH', `/tenant/webhooks/${hook.id}`, {
      key: ws.adminKey,
      body: { events: ['order.completed', 'profile.merged'] },
    });
    expect(patched.body.data.events).toEqual(['order.completed', 'profile.merged']);
    expect((await svc.call('DELETE', `/tenant/webhooks/${hook.id}`, { key: ws.adminKey })).status).toBe(200);
    expect((await svc.call('GET', `/tenant/webhooks/${hook.id}`, { key: ws.adminKey })).status).toBe(404);
  });

  it('refuses non-admin keys, unknown event kinds and malformed whsec_ secrets', async () => {
    const ws = await svc.newWorkspace();
    const editor = await ws.key(['editor']);
    const body = { url: `${rx.url}/x`, events: ['profile.created'] };
    expect((await svc.call('POST', '/tenant/webhooks', { key: editor, body })).status).toBe(403);
    const bad = { ...body, events: ['profile.deleted'] };
    expect((await svc.call('POST', '/tenant/webhooks', { key: ws.adminKey, body: bad })).status).toBe(400);
    const secret = { ...body, secret: 'whsec_not*base64*at*all' };
    expect((await svc.call('POST', '/tenant/webhooks', { key: ws.adminKey, body: secret })).status).toBe(400);
  });
});

describe('webhook deliveries', () => {
  it('delivers profile.created for an ingested identify, signed so both schemes verify', async () => {
    const ws = await svc.newWorkspace();
    const hook = await subscribe(ws, '/created');
    await identify(ws);
    const [got] = await rx.waitFor('/created', 1);
    const body = JSON.parse(got!.body);
    expect(body).toMatchObject({ type: 'profile.created', workspace_id: ws.id });
    expect(body.id).toMatch(/^evt_/);
    expect(new Date(body.created_at).toISOString()).toBe(body.created_at);
    expect(body.data).toBeTypeOf('object');
    expect(got!.headers['x-service-event']).toBe('profile.created');
    expect(got!.headers['x-service-delivery']).toBe(got!.headers['webhook-id']);
    expect(verifyServiceSignature(hook.secret, got!)).toBe(true);
    expect(verifyStandardWebhook(hook.secret, got!)).toBe(true);
    // The standardwebhooks library itself, given the same secret, accepts it (and throws otherwise).
    const headers = Object.fromEntries(Object.entries(got!.headers).map(([k, v]) => [k, String(v)]));
    expect(new Webhook(hook.secret).verify(got!.body, headers)).toEqual(body);
    expect(verifyServiceSignature(`${hook.secret}x`, got!)).toBe(false);
    const [d] = await until(
      'the delivery to be delivered',
      () => deliveriesOf(ws, hook.id),
      (l) => l[0]?.status === 'delivered',
    );
    expect(d).toMatchObject({ attempts: 1, last_status_code: 200, event_id: body.id, next_attempt_at: null });
  });

  it('delivers order.completed, profile.merged and churn.risk_escalated from the flows that cause them', async () => {
    const ws = await svc.newWorkspace();
    const hook = await subscribe(ws, '/kinds', {
      events: ['order.completed', 'profile.merged', 'churn.risk_escalated'],
    });
    const send = async (body: Record<string, unknown>) =>
      expect((await svc.call('POST', '/api/ingest', { key: ws.adminKey, body })).status).toBe(202);
    const order = (identity: string, daysAgo: number) =>
      send({
        event_type: 'order',
        event_name: 'Order Completed',
        identity,
        timestamp: new Date(Date.now() - daysAgo * 86_400_000).toISOString(),
        payload: { order_id: `o-${randomUUID()}`, total: 40, status: 'completed' },
      });
    // Two orders a year ago: order.completed twice, and a churn risk past the threshold once fitted.
    await order('lapsed@shop.test', 400);
    await order('lapsed@shop.test', 390);
    // Two people the API merges: profile.merged.
    await send({ event_type: 'identify', event_name: 'Signed in', identity: 'one@shop.test' });
    await send({ event_type: 'identify', event_name: 'Signed in', identity: 'two@shop.test' });
    await waitProcessed(svc.rt.deps.db);
    const idOf = async (identity: string) =>
      (await svc.call('GET', `/tenant/profiles?identity=${identity}`, { key: ws.adminKey })).body.data[0].id;
    const merged = await svc.call('POST', '/identity/merge', {
      key: ws.adminKey,
      body: {
        primary_profile_id: await idOf('one@shop.test'),
        secondary_profile_ids: [await idOf('two@shop.test')],
      },
    });
    expect(merged.status, merged.text).toBe(200);
    const fit = await svc.call('POST', '/intelligence/models/fit', { key: ws.adminKey, body: {} });
    expect(fit.status, fit.text).toBe(200);

    const got = await until(
      'the four facts of three kinds at /kinds',
      async () => rx.received.filter((r) => r.path === '/kinds'),
      (l) => new Set(l.map((r) => JSON.parse(r.body).type)).size === 3 && l.length >= 4,
      30_000,
    );
    const types = got.map((r) => JSON.parse(r.body).type).sort();
    expect(types).toEqual(['churn.risk_escalated', 'order.completed', 'order.completed', 'profile.merged']);
    for (const r of got) {
      expect(verifyServiceSignature(hook.secret, r)).toBe(true);
      expect(r.headers['x-service-event']).toBe(JSON.parse(r.body).type);
    }
    const mergedBody = JSON.parse(got.find((r) => JSON.parse(r.body).type === 'profile.merged')!.body);
    expect(mergedBody.data).toMatchObject({ primary_profile_id: await idOf('one@shop.test') });
  }, 60_000);

  it('retries a receiver that fails three times and ends delivered after four attempts', async () => {
    const ws = await svc.newWorkspace();
    rx.script('/flaky', [{ status: 500 }, { status: 502 }, { status: 503 }]);
    const hook = await subscribe(ws, '/flaky');
    await identify(ws);
    const [d] = await until(
      'the delivery to be delivered',
      () => deliveriesOf(ws, hook.id),
      (l) => l[0]?.status === 'delivered',
    );
    expect(d).toMatchObject({ attempts: 4, last_status_code: 200 });
    const attempts = await svc.call('GET', `/tenant/webhooks/${hook.id}/deliveries/${d!.id}`, {
      key: ws.adminKey,
    });
    expect(attempts.body.data.map((a: { status_code: number }) => a.status_code)).toEqual([
      500, 502, 503, 200,
    ]);
    expect(attempts.body.data[0].error).toBe('HTTP 500');
    // Every attempt of one delivery carries the same delivery id (receivers deduplicate on it).
    const sent = await rx.waitFor('/flaky', 4);
    expect(new Set(sent.map((r) => r.headers['x-service-delivery']))).toEqual(new Set([d!.id]));
  });

  it('gives up on a receiver that hangs past the timeout, and delivers on the next attempt', async () => {
    const ws = await svc.newWorkspace();
    // A receiver that never answers its first request and answers 200 to the next.
    let seen = 0;
    const hanging = http.createServer((_req, res) => {
      if (seen++ > 0) res.writeHead(200).end('ok');
    });
    await new Promise<void>((r) => hanging.listen(0, '127.0.0.1', r));
    const { port } = hanging.address() as AddressInfo;
    const timeoutMs = webhookPolicy.timeoutMs;
    webhookPolicy.timeoutMs = 500; // read at every attempt
    try {
      const res = await svc.call('POST', '/tenant/webhooks', {
        key: ws.adminKey,
        body: { url: `http://127.0.0.1:${port}/hang`, events: ['profile.created'] },
      });
      expect(res.status, res.text).toBe(200);
      await identify(ws);
      const [d] = await until(
        'the delivery to be delivered',
        () => deliveriesOf(ws, res.body.data.id),
        (l) => l[0]?.status === 'delivered',
      );
      expect(d).toMatchObject({ attempts: 2, last_status_code: 200 });
      const attempts = await svc.call('GET', `/tenant/webhooks/${res.body.data.id}/deliveries/${d!.id}`, {
        key: ws.adminKey,
      });
      expect(attempts.body.data[0]).toMatchObject({ status_code: null, error: 'timeout after 500 ms' });
    } finally {
      webhookPolicy.timeoutMs = timeoutMs;
      hanging.closeAllConnections();
      await new Promise((r) => hanging.close(r));
    }
  });

  it('keeps delivering to other receivers while one hangs, which holds only a few attempts at once', async () => {
    const ws = await svc.newWorkspace();
    let open = 0;
    let most = 0;
    const hanging = http.createServer(() => {
      most = Math.max(most, ++open);
    });
    await new Promise<void>((r) => hanging.listen(0, '127.0.0.1', r));
    const { port } = hanging.address() as AddressInfo;
    const stuck = await svc.call('POST', '/tenant/webhooks', {
      key: ws.adminKey,
      body: { url: `http://127.0.0.1:${port}/stuck`, events: ['profile.created'] },
    });
    expect(stuck.status, stuck.text).toBe(200);
    await subscribe(ws, '/beside');
    try {
      // More attempts to the hanging receiver than the queue has slots (32): without a share per
      // receiver they would take every slot for the 10 s timeout.
      const n = 40;
      await Promise.all(Array.from({ length: n }, () => identify(ws)));
      await rx.waitFor('/beside', n, webhookPolicy.timeoutMs - 2_000);
      expect(most).toBeGreaterThan(0);
      expect(most).toBeLessThanOrEqual(webhookPolicy.perSubscription);
    } finally {
      await svc.call('DELETE', `/tenant/webhooks/${stuck.body.data.id}`, { key: ws.adminKey });
      hanging.closeAllConnections();
      await new Promise((r) => hanging.close(r));
    }
  });

  it("sends a profile's facts in order: a later one waits while an earlier one is being retried", async () => {
    const ws = await svc.newWorkspace();
    const deferMs = webhookPolicy.deferMs;
    webhookPolicy.deferMs = 300; // the safety-net wait; a release comes sooner
    try {
      await subscribe(ws, '/ordered', { events: ['profile.created', 'order.completed'] });
      // The first two requests fail, whichever fact they carry; then every one succeeds.
      rx.script('/ordered', [{ status: 500 }, { status: 500 }]);
      const send = async (body: Record<string, unknown>) =>
        expect((await svc.call('POST', '/api/ingest', { key: ws.adminKey, body })).status).toBe(202);
      const identity = `${randomUUID()}@shop.test`;
      // One person: a profile.created, then three order.completed, all about the same profile.
      await send({ event_type: 'identify', event_name: 'Signed in', identity });
      for (let i = 0; i < 3; i++) {
        await send({
          event_type: 'order',
          event_name: 'Order Completed',
          identity,
          payload: { order_id: `o-${randomUUID()}`, total: 10 + i, status: 'completed' },
        });
      }
      const got = await rx.waitFor('/ordered', 6, 20_000);
      const facts = got.map(
        (r) => JSON.parse(r.body) as { id: string; type: string; data: { total?: number } },
      );
      // Each request is the first fact not yet delivered: the created one three times (two 500s),
      // then the orders in the order they were placed, each once.
      expect(facts.map((f) => f.type)).toEqual([
        'profile.created',
        'profile.created',
        'profile.created',
        'order.completed',
        'order.completed',
        'order.completed',
      ]);
      expect(facts.slice(3).map((f) => f.data.total)).toEqual([10, 11, 12]);
    } finally {
      webhookPolicy.deferMs = deferMs;
    }
  });

  it('waits as long as a Retry-After answer asks before trying again', async () => {
    const ws = await svc.newWorkspace();
    rx.script('/later', [{ status: 429, headers: { 'retry-after': '2' } }]);
    const hook = await subscribe(ws, '/later');
    await identify(ws);
    await rx.waitFor('/later', 2);
    const times = await until(
      'the delivery to be delivered',
      () => svc.call('GET', `/tenant/webhooks/${hook.id}/deliveries`, { key: ws.adminKey }),
      (r) => r.body.data[0]?.status === 'delivered',
    );
    const attempts = await svc.call(
      'GET',
      `/tenant/webhooks/${hook.id}/deliveries/${times.body.data[0].id}`,
      {
        key: ws.adminKey,
      },
    );
    const [first, second] = attempts.body.data as Array<{ attempted_at: string }>;
    expect(Date.parse(second!.attempted_at) - Date.parse(first!.attempted_at)).toBeGreaterThanOrEqual(1_900);
  });

  it('disables the subscription when the receiver answers 410 Gone', async () => {
    const ws = await svc.newWorkspace();
    rx.script('/gone', [{ status: 410 }]);
    const hook = await subscribe(ws, '/gone');
    await identify(ws);
    const [d] = await until(
      'the delivery to fail',
      () => deliveriesOf(ws, hook.id),
      (l) => l[0]?.status === 'failed',
    );
    expect(d).toMatchObject({ attempts: 1, last_status_code: 410 });
    const after = await svc.call('GET', `/tenant/webhooks/${hook.id}`, { key: ws.adminKey });
    expect(after.body.data).toMatchObject({
      enabled: false,
      disabled_reason: 'the receiver answered 410 Gone',
    });
  });

  /** A subscription to `path` whose first delivery went out, and the answer to a re-send of it. */
  async function deliveredThenResent(path: string) {
    const ws = await svc.newWorkspace();
    const hook = await subscribe(ws, path);
    await identify(ws);
    const [d] = await until(
      'the delivery to be delivered',
      () => deliveriesOf(ws, hook.id),
      (l) => l[0]?.status === 'delivered',
    );
    const res = await svc.call('POST', `/tenant/webhooks/${hook.id}/deliveries/${d!.id}/redeliver`, {
      key: ws.adminKey,
    });
    expect(res.status, res.text).toBe(200);
    return { ws, hook, d: d!, res };
  }

  it('re-sends a delivered delivery on request, as a new attempt with the same delivery id', async () => {
    const { ws, hook, d } = await deliveredThenResent('/again');
    const sent = await rx.waitFor('/again', 2);
    expect(sent[1]!.headers['x-service-delivery']).toBe(d!.id);
    expect(sent[1]!.body).toBe(sent[0]!.body);
    await until(
      'the re-send to be delivered',
      () => deliveriesOf(ws, hook.id),
      (l) => l[0]?.status === 'delivered' && l[0]?.attempts === 2,
    );
  });

  it('sends every attempt with an X-Request-Id and records it; a re-send carries the redeliver request’s', async () => {
    const { ws, hook, d, res } = await deliveredThenResent('/request-ids');
    const sent = await rx.waitFor('/request-ids', 2);
    const attempts = await until<Array<{ request_id: string }>>(
      'both attempts recorded',
      async () =>
        (await svc.call('GET', `/tenant/webhooks/${hook.id}/deliveries/${d!.id}`, { key: ws.adminKey })).body
          .data,
      (a) => a.length === 2,
    );
    // The planned attempt had an id of its own; the re-send the one of the request that asked for it.
    expect(attempts.map((a) => a.request_id)).toEqual([
      sent[0]!.headers['x-request-id'],
      res.headers['x-request-id'],
    ]);
    expect(sent[0]!.headers['x-request-id']).toMatch(/^req_[0-9a-z]{26}$/);
    expect(sent[1]!.headers['x-request-id']).toBe(res.headers['x-request-id']);
    // The test send names its request too.
    const test = await svc.call('POST', `/tenant/webhooks/${hook.id}/test`, { key: ws.adminKey });
    expect(test.status, test.text).toBe(200);
    const [, , probe] = await rx.waitFor('/request-ids', 3);
    expect(probe!.headers['x-request-id']).toBe(test.headers['x-request-id']);
  });
  it('dead-letters a delivery whose attempts are used up, and a re-send of it can still succeed', async () => {
    const ws = await svc.newWorkspace();
    const saved = webhookPolicy.maxAttempts;
    webhookPolicy.maxAttempts = 3;
    try {
      rx.script('/dead', [{ status: 500 }, { status: 500 }, { status: 500 }]);
      const hook = await subscribe(ws, '/dead');
      await identify(ws);
      const [d] = await until(
        'the delivery to be dead-lettered',
        () => deliveriesOf(ws, hook.id),
        (l) => l[0]?.status === 'dead',
      );
      expect(d).toMatchObject({ attempts: 3, last_status_code: 500, next_attempt_at: null });
      await svc.call('POST', `/tenant/webhooks/${hook.id}/deliveries/${d!.id}/redeliver`, {
        key: ws.adminKey,
      });
      await until(
        'the re-send of the dead letter to be delivered',
        () => deliveriesOf(ws, hook.id),
        (l) => l[0]?.status === 'delivered' && l[0]?.attempts === 4,
      );
    } finally {
      webhookPolicy.maxAttempts = saved;
    }
  });
});
