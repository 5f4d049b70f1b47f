import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitUntil } from '../../../test/wait';
import { webhookPolicy } from './policy';
import {
  type Receiver,
  restartableService,
  startReceiver,
  verifyServiceSignature,
} from './webhooks.test-kit';

/**
 * A delivery whose receiver keeps failing outlives the service: the service stops in the middle of
 * the retry schedule, starts again on the same database, and the delivery goes on from its recorded
 * attempts until the receiver takes it: retries survive restarts.
 */
webhookPolicy.backoff = { baseMs: 50, capMs: 200 };
webhookPolicy.fanoutEvery = 'every 1s';

type Service = ReturnType<typeof restartableService>;

let rx: Receiver;
beforeAll(async () => {
  rx = await startReceiver();
});
afterAll(async () => {
  await rx?.close();
});

describe('a delivery in the middle of its retry schedule when the service restarts', () => {
  const settings = { CDP_ALLOW_PRIVATE_WEBHOOKS: '1' };
  const svc = restartableService();
  const call = svc.call;
  afterAll(() => svc.remove());

  it('goes on after the restart from its recorded attempts, and is delivered once the receiver answers', async () => {
    rx.script(
      '/restart',
      Array.from({ length: 1000 }, () => ({ status: 503 })),
    );
    await svc.start(settings);
    const hook = await call('POST', '/tenant/webhooks', {
      url: `${rx.url}/restart`,
      events: ['profile.created'],
    });
    expect(hook.status).toBe(200);
    const sent = await call('POST', '/api/ingest', {
      event_type: 'identify',
      event_name: 'Signed in',
      identity: `${randomUUID()}@shop.test`,
    });
    expect(sent.status).toBe(202);
    await rx.waitFor('/restart', 2, 30_000);
    await svc.stop();
    const failedBefore = rx.received.filter((r) => r.path === '/restart').length;

    rx.script('/restart', []); // from now on the receiver answers 200
    await svc.start(settings);
    const got = await rx.waitFor('/restart', failedBefore + 1, 30_000);
    const last = got[got.length - 1]!;
    expect(verifyServiceSignature(hook.body.data.secret, last)).toBe(true);
    expect(JSON.parse(last.body).type).toBe('profile.created');

    let d: { status?: string; attempts?: number } | undefined;
    await waitUntil(
      async () => {
        d = (await call('GET', `/tenant/webhooks/${hook.body.data.id}/deliveries`)).body.data[0];
        return d?.status === 'delivered';
      },
      { what: 'the delivery to be delivered after the restart', detail: () => d },
    );
    expect(d!.attempts).toBeGreaterThanOrEqual(failedBefore + 1);
    // One delivery for the one fact: the restart made no second one.
    expect((await call('GET', `/tenant/webhooks/${hook.body.data.id}/deliveries`)).body.data).toHaveLength(1);
  }, 90_000);
});

async function settledDelivery(call: Service['call'], hookId: string) {
  let d: { id: string; status: string } | undefined;
  await waitUntil(
    async () => {
      d = (await call('GET', `/tenant/webhooks/${hookId}/deliveries`)).body.data[0];
      return d && d.status !== 'pending';
    },
    { what: `the delivery of ${hookId} to settle`, timeoutMs: 15_000, detail: () => d },
  );
  return d!;
}

/**
 * A subscription saved while CDP_ALLOW_PRIVATE_WEBHOOKS=1 was set keeps its URL when the service
 * restarts without it. The send-time check, not only the one at creation, must then refuse it.
 */
describe('a private subscription saved with CDP_ALLOW_PRIVATE_WEBHOOKS=1, after a restart without it', () => {
  const svc = restartableService();
  const call = svc.call;
  afterAll(() => svc.remove());

  it('is refused at send time with the reason in the attempt log, and its receiver sees no connection', async () => {
    await svc.start({ CDP_ALLOW_PRIVATE_WEBHOOKS: '1' });
    const hooks: Array<{ id: string; why: RegExp }> = [];
    for (const [url, why] of [
      [`${rx.url}/plain`, /https:\/\//], // http://127.0.0.1:…
      [`${rx.url.replace('http:', 'https:')}/literal`, /127\.0\.0\.1.*loopback/], // https://127.0.0.1:…
      [`${rx.url.replace('http://127.0.0.1', 'https://localhost')}/name`, /loopback/],
    ] as const) {
      const res = await call('POST', '/tenant/webhooks', { url, events: ['profile.created'] });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      hooks.push({ id: res.body.data.id, why });
    }
    await svc.stop();

    await svc.start();
    const before = rx.connections();
    const sent = await call('POST', '/api/ingest', {
      event_type: 'identify',
      event_name: 'Signed in',
      identity: `${randomUUID()}@shop.test`,
    });
    expect(sent.status).toBe(202);
    for (const hook of hooks) {
      const d = await settledDelivery(call, hook.id);
      // Refused for good: the same check would refuse every retry.
      expect(d).toMatchObject({ status: 'failed', attempts: 1, last_status_code: null });
      const attempts = (await call('GET', `/tenant/webhooks/${hook.id}/deliveries/${d.id}`)).body.data;
      expect(attempts).toHaveLength(1);
      expect(attempts[0].error).toMatch(hook.why);
      expect(attempts[0].error).toContain('CDP_ALLOW_PRIVATE_WEBHOOKS');

      const test = await call('POST', `/tenant/webhooks/${hook.id}/test`);
      expect(test.body.data).toMatchObject({ delivered: false, status_code: null });
      expect(test.body.data.error).toMatch(hook.why);
    }
    expect(rx.received.filter((r) => ['/plain', '/literal', '/name'].includes(r.path))).toHaveLength(0);
    expect(rx.connections()).toBe(before);
  }, 90_000);
});
