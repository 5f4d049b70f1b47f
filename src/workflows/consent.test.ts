import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../../test/expect-error';
import { startTestService, type TestService, type TestWorkspace } from '../../test/harness';
import { letTimePass, waitUntil } from '../../test/wait';
import { waitProcessed } from '../modules/processing/processing.test-kit';
import { webhookPolicy } from '../modules/webhooks/policy';
import { type PeopleReceiver, startPeopleReceiver } from '../modules/webhooks/webhooks.test-kit';

/**
 * Consent end to end (docs/profiles.md and docs/webhooks.md, "Consent"): choices come in on events
 * (native, Segment, RudderStack) and through the PUT, are kept per category with time and source,
 * and gate what webhook subscriptions that name categories receive; a denial cancels what is queued
 * and the PUT answers only once nothing about the profile is on the wire.
 */

// Short retries, set before the service registers its queues.
webhookPolicy.backoff = { baseMs: 50, capMs: 200 };

let svc: TestService;
let ws: TestWorkspace;
let rx: PeopleReceiver;
let url: string;

beforeAll(async () => {
  [svc, rx] = await Promise.all([
    startTestService({ CDP_ALLOW_PRIVATE_WEBHOOKS: '1' }),
    startPeopleReceiver(),
  ]);
  url = rx.url;
  ws = await svc.newWorkspace('consent');
});
afterAll(async () => {
  await Promise.all([svc?.close(), rx?.close()]);
});

const admin = () => ({ key: ws.adminKey });
const email = () => `${randomUUID()}@consent.test`;

async function ingest(body: object, w = ws) {
  const res = await svc.call('POST', '/api/ingest', { key: w.adminKey, body });
  expect(res.status, res.text).toBe(202);
  await waitProcessed(svc.rt.deps.db);
}

async function profileOf(identity: string, w = ws) {
  const res = await svc.call('GET', `/tenant/profiles?identity=${encodeURIComponent(identity)}`, {
    key: w.adminKey,
  });
  expect(res.status, res.text).toBe(200);
  const id = res.body.data[0].id as string;
  return (await svc.call('GET', `/tenant/profiles/${id}`, { key: w.adminKey })).body.data;
}

async function putConsent(id: string, categories: Record<string, boolean>, w = ws) {
  return svc.call('PUT', `/tenant/profiles/${id}/consent`, { key: w.adminKey, body: { categories } });
}

async function subscribe(body: object, w = ws) {
  const res = await svc.call('POST', '/tenant/webhooks', {
    key: w.adminKey,
    body: { url: `${url}/hook`, events: ['profile.created', 'order.completed'], ...body },
  });
  expect(res.status, res.text).toBe(200);
  return res.body.data as { id: string; consent_categories: string[] };
}

const deliveriesOf = async (hook: string, w = ws) =>
  (await svc.call('GET', `/tenant/webhooks/${hook}/deliveries?limit=200`, { key: w.adminKey })).body
    .data as Array<{ id: string; status: string; event_type: string; last_error: string | null }>;

const order = (who: string, total = 10) => ({
  event_type: 'order',
  event_name: 'Order Completed',
  identity: who,
  payload: { order_id: `o-${randomUUID()}`, total },
});

describe('consent choices', () => {
  it('are recorded from a native event, with their time and source, and a lineage row per change', async () => {
    const who = email();
    await ingest({
      event_type: 'identify',
      event_name: 'Signed up',
      identity: who,
      timestamp: '2026-01-01T00:00:00Z',
      consent: { categories: { analytics: true, ads: false } },
    });
    const p = await profileOf(who);
    expect(p.consent.categories).toEqual({
      analytics: {
        granted: true,
        updated_at: '2026-01-01T00:00:00.000Z',
        source_type: 'event',
        source_id: expect.stringMatching(/^evt_/),
      },
      ads: {
        granted: false,
        updated_at: '2026-01-01T00:00:00.000Z',
        source_type: 'event',
        source_id: expect.stringMatching(/^evt_/),
      },
    });
    const lineage = (await svc.call('GET', `/tenant/profiles/${p.id}/lineage`, admin())).body.data;
    expect(lineage.filter((l: { path: string }) => l.path.startsWith('/consent/'))).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ path: '/consent/analytics', old: null, new: true, source_type: 'event' }),
        expect.objectContaining({ path: '/consent/ads', old: null, new: false, source_type: 'event' }),
      ]),
    );
  });

  it('of one person in one batch are applied in order, each from the state the one before left', async () => {
    const who = email();
    const at = (day: string, categories: Record<string, boolean>) => ({
      event_type: 'track',
      event_name: 'Consent',
      identity: who,
      timestamp: `${day}T00:00:00Z`,
      consent: { categories },
    });
    const res = await svc.call('POST', '/tenant/ingest/batch', {
      ...admin(),
      body: [
        at('2026-01-01', { analytics: true, ads: false }),
        at('2026-01-02', { ads: true }),
        at('2025-12-01', { analytics: false }),
      ],
    });
    expect(res.status, res.text).toBe(202);
    await waitProcessed(svc.rt.deps.db);
    const p = await profileOf(who);
    expect(p.consent.categories).toEqual({
      analytics: expect.objectContaining({ granted: true, updated_at: '2026-01-01T00:00:00.000Z' }),
      ads: expect.objectContaining({ granted: true, updated_at: '2026-01-02T00:00:00.000Z' }),
    });
    const lineage = (await svc.call('GET', `/tenant/profiles/${p.id}/lineage`, admin())).body.data;
    const consent = lineage.filter((l: { path: string }) => l.path.startsWith('/consent/'));
    expect(consent).toHaveLength(3);
    expect(consent).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ path: '/consent/analytics', old: null, new: true }),
        expect.objectContaining({ path: '/consent/ads', old: null, new: false }),
        expect.objectContaining({ path: '/consent/ads', old: false, new: true }),
      ]),
    );
  });

  it('keep the newer choice: an older event does not undo a PUT, a newer one does', async () => {
    const who = email();
    await ingest({ event_type: 'identify', event_name: 'Signed up', identity: who });
    const { id } = await profileOf(who);
    const put = await putConsent(id, { analytics: false });
    expect(put.status, put.text).toBe(200);
    expect(put.body.data).toEqual({
      profile_id: id,
      categories: { analytics: expect.objectContaining({ granted: false, source_type: 'api_key' }) },
    });
    await ingest({
      event_type: 'track',
      event_name: 'Old',
      identity: who,
      timestamp: '2020-01-01T00:00:00Z',
      consent: { categories: { analytics: true } },
    });
    expect((await profileOf(who)).consent.categories.analytics.granted).toBe(false);
    await ingest({
      event_type: 'track',
      event_name: 'New',
      identity: who,
      timestamp: new Date(Date.now() + 60_000).toISOString(),
      consent: { categories: { analytics: true } },
    });
    expect((await profileOf(who)).consent.categories.analytics).toEqual(
      expect.objectContaining({ granted: true, source_type: 'event' }),
    );
  });

  it("come from Segment's categoryPreferences and RudderStack's consentManagement on /v1", async () => {
    const [a, b] = [email(), email()];
    const v1 = (body: object) => svc.call('POST', '/v1/identify', { key: ws.adminKey, body });
    expect(
      (
        await v1({
          userId: a,
          context: { consent: { categoryPreferences: { Advertising: false, Analytics: true } } },
        })
      ).status,
    ).toBe(200);
    expect(
      (
        await v1({
          userId: b,
          context: {
            consentManagement: {
              allowedConsentIds: ['C0001', 'C0002'],
              deniedConsentIds: ['C0002', 'C0004'],
            },
          },
        })
      ).status,
    ).toBe(200);
    await waitProcessed(svc.rt.deps.db);
    const granted = async (who: string) =>
      Object.fromEntries(
        Object.entries((await profileOf(who)).consent.categories).map(([k, v]) => [
          k,
          (v as { granted: boolean }).granted,
        ]),
      );
    expect(await granted(a)).toEqual({ Advertising: false, Analytics: true });
    expect(await granted(b)).toEqual({ C0001: true, C0002: false, C0004: false });
  });

  it('refuse what is not a choice with 400 at its path, on every entry point', async () => {
    const who = email();
    const native = await svc.call('POST', '/api/ingest', {
      key: ws.adminKey,
      body: { event_type: 'track', event_name: 'x', identity: who, consent: { categories: { a: 'yes' } } },
    });
    expectError(native, 400, 'VALIDATION_ERROR');
    expect(native.body.details[0].path).toBe('/consent/categories/a');
    const many = Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`c${i}`, true]));
    expectError(
      await svc.call('POST', '/api/ingest', {
        key: ws.adminKey,
        body: { event_type: 'track', event_name: 'x', identity: who, consent: { categories: many } },
      }),
      400,
      'VALIDATION_ERROR',
    );
    const v1 = await svc.call('POST', '/v1/track', {
      key: ws.adminKey,
      body: { userId: who, event: 'x', context: { consent: { categoryPreferences: { Ads: 1 } } } },
    });
    expectError(v1, 400, 'VALIDATION_ERROR');
    expect(v1.body.details[0].path).toBe('/context/consent/categoryPreferences/Ads');
    await ingest({ event_type: 'identify', event_name: 'x', identity: who });
    const { id } = await profileOf(who);
    expectError(await putConsent(id, {}), 400, 'VALIDATION_ERROR');
    expectError(await putConsent(id, { ['x'.repeat(101)]: true }), 400, 'VALIDATION_ERROR');
    expectError(await putConsent(randomUUID(), { a: true }), 404, 'NOT_FOUND');
  });

  it('follow a merge: the survivor keeps the newer choice of each category', async () => {
    const [a, b] = [email(), email()];
    await ingest({
      event_type: 'identify',
      event_name: 'x',
      identity: a,
      timestamp: '2025-01-01T00:00:00Z',
      consent: { categories: { analytics: true, ads: true } },
    });
    await ingest({
      event_type: 'identify',
      event_name: 'x',
      identity: b,
      timestamp: '2025-06-01T00:00:00Z',
      consent: { categories: { ads: false, email: true } },
    });
    const [pa, pb] = [await profileOf(a), await profileOf(b)];
    const merged = await svc.call('POST', '/identity/merge', {
      ...admin(),
      body: { primary_profile_id: pa.id, secondary_profile_ids: [pb.id] },
    });
    expect(merged.status, merged.text).toBe(200);
    const cats = (await profileOf(a)).consent.categories;
    expect({ analytics: cats.analytics.granted, ads: cats.ads.granted, email: cats.email.granted }).toEqual({
      analytics: true,
      ads: false,
      email: true,
    });
    const { rows } = await svc.rt.deps.db.query(
      'SELECT count(*)::int AS n FROM profile_consent WHERE profile_id = $1',
      [pb.id],
    );
    expect(rows[0]).toEqual({ n: 0 });
  });

  it('are in the access export and go with an erasure', async () => {
    const who = email();
    await ingest({
      event_type: 'identify',
      event_name: 'x',
      identity: who,
      consent: { categories: { analytics: true } },
    });
    const { id } = await profileOf(who);
    const exported = await svc.call('GET', `/tenant/profiles/${id}/export`, admin());
    expect(exported.status).toBe(200);
    expect(exported.body.consent).toEqual([
      expect.objectContaining({ profile_id: id, category: 'analytics', granted: true }),
    ]);
    const erased = await svc.call('DELETE', `/tenant/profiles/${id}`, admin());
    expect(erased.status, erased.text).toBe(200);
    expect(erased.body.data.counts.profile_consent).toBe(1);
    const { rows } = await svc.rt.deps.db.query(
      'SELECT count(*)::int AS n FROM profile_consent WHERE profile_id = $1',
      [id],
    );
    expect(rows[0]).toEqual({ n: 0 });
  });
});

describe('a webhook subscription that names consent categories', () => {
  it('gets facts only about profiles that granted every one, and never those of a denied one', async () => {
    const hook = await subscribe({ consent_categories: ['analytics', 'ads'] });
    expect(hook.consent_categories).toEqual(['analytics', 'ads']);
    const [yes, partly, none] = [email(), email(), email()];
    await ingest({
      event_type: 'identify',
      event_name: 'x',
      identity: yes,
      consent: { categories: { analytics: true, ads: true } },
    });
    await ingest({
      event_type: 'identify',
      event_name: 'x',
      identity: partly,
      consent: { categories: { analytics: true, ads: false } },
    });
    // No recorded choice: the workspace's default (granted) counts.
    await ingest({ event_type: 'identify', event_name: 'x', identity: none });
    await waitUntil(() => rx.about(yes).length >= 1 && rx.about(none).length >= 1, {
      what: 'the allowed profiles delivered',
    });
    expect(rx.about(partly)).toEqual([]);
    expect((await deliveriesOf(hook.id)).length).toBe(2);
    await svc.call('DELETE', `/tenant/webhooks/${hook.id}`, admin());
  });

  it('counts a category with no recorded choice as denied when the workspace says so', async () => {
    const other = await svc.newWorkspace('consent-denied');
    const set = await svc.call('PATCH', '/tenant/settings', {
      key: other.adminKey,
      body: { consent_default: 'denied' },
    });
    expect(set.status, set.text).toBe(200);
    const hook = await subscribe({ consent_categories: ['analytics'] }, other);
    const [silent, granted] = [email(), email()];
    await ingest({ event_type: 'identify', event_name: 'x', identity: silent }, other);
    await ingest(
      {
        event_type: 'identify',
        event_name: 'x',
        identity: granted,
        consent: { categories: { analytics: true } },
      },
      other,
    );
    await waitUntil(() => rx.about(granted).length >= 1, { what: 'the granted profile delivered' });
    expect(rx.about(silent)).toEqual([]);
    expect((await deliveriesOf(hook.id, other)).length).toBe(1);
  });

  it('has queued retries cancelled by a denial: nothing more about the profile is sent', async () => {
    const hook = await subscribe({ url: `${url}/retries`, consent_categories: ['analytics'] });
    const [who, witness] = [email(), email()];
    rx.failing.add(who);
    await ingest({ event_type: 'identify', event_name: 'x', identity: who });
    await waitUntil(() => rx.about(who).length >= 2, { what: 'two failed attempts about the person' });
    const { id } = await profileOf(who);
    const put = await putConsent(id, { analytics: false });
    expect(put.status, put.text).toBe(200);
    const sent = rx.about(who).length;
    const cancelled = (await deliveriesOf(hook.id)).filter((d) => d.status === 'cancelled');
    expect(cancelled).toEqual([
      expect.objectContaining({ last_error: 'consent withdrawn before it was sent' }),
    ]);
    // Every attempt job of the cancelled delivery has run (and done nothing), and a fact about
    // someone else made after the denial has gone out: the deliverer has moved past it.
    await waitUntil(
      async () => {
        const { rows } = await svc.rt.deps.db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM jobs WHERE key LIKE $1 AND state IN ('queued', 'running')`,
          [`${cancelled[0]!.id}#%`],
        );
        return rows[0]!.n === 0;
      },
      { what: 'the cancelled delivery’s jobs to finish' },
    );
    await ingest({ event_type: 'identify', event_name: 'x', identity: witness });
    await waitUntil(() => rx.about(witness).length >= 1, { what: 'a later fact delivered' });
    expect(rx.about(who).length).toBe(sent);
    // A new fact about the denied profile makes no delivery at all.
    await ingest(order(who));
    await ingest(order(witness));
    await waitUntil(() => rx.about(witness).length >= 2, { what: 'the witness’s order delivered' });
    expect(rx.about(who).length).toBe(sent);
    rx.failing.delete(who);
    await svc.call('DELETE', `/tenant/webhooks/${hook.id}`, admin());
  });

  it('has them cancelled by a denial that a later event of the same batch takes back', async () => {
    const hook = await subscribe({ url: `${url}/batched`, consent_categories: ['ads'] });
    const who = email();
    rx.failing.add(who);
    await ingest({ event_type: 'identify', event_name: 'x', identity: who });
    await waitUntil(() => rx.about(who).length >= 2, { what: 'two failed attempts about the person' });
    const res = await svc.call('POST', '/tenant/ingest/batch', {
      ...admin(),
      body: [
        { event_type: 'track', event_name: 'x', identity: who, consent: { categories: { ads: false } } },
        {
          event_type: 'track',
          event_name: 'x',
          identity: who,
          timestamp: new Date(Date.now() + 1000).toISOString(),
          consent: { categories: { ads: true } },
        },
      ],
    });
    expect(res.status, res.text).toBe(202);
    await waitProcessed(svc.rt.deps.db);
    expect((await profileOf(who)).consent.categories.ads.granted).toBe(true);
    expect(await deliveriesOf(hook.id)).toEqual([
      expect.objectContaining({ status: 'cancelled', last_error: 'consent withdrawn before it was sent' }),
    ]);
    rx.failing.delete(who);
    await svc.call('DELETE', `/tenant/webhooks/${hook.id}`, admin());
  });

  it('answers a denial only once the attempt under way has ended', async () => {
    const hook = await subscribe({ url: `${url}/slow`, consent_categories: ['analytics'] });
    const who = email();
    const release = rx.hold(who);
    await ingest({ event_type: 'identify', event_name: 'x', identity: who });
    await waitUntil(() => rx.about(who).length > 0, {
      what: 'the attempt to reach the receiver',
    });
    const { id } = await profileOf(who);
    let answeredAt = 0;
    const put = putConsent(id, { analytics: false }).then((r) => {
      answeredAt = Date.now();
      return r;
    });
    // The withdrawal has committed (the delivery is cancelled) while the attempt is still on the wire.
    await waitUntil(async () => (await deliveriesOf(hook.id)).some((d) => d.status === 'cancelled'), {
      what: 'the delivery cancelled',
    });
    await letTimePass(300, 'a withdrawal that did not wait for the attempt would have answered by now');
    expect(answeredAt).toBe(0);
    release();
    expect((await put).status).toBe(200);
    const [seen] = rx.about(who);
    expect(seen!.answeredAt).toBeLessThanOrEqual(answeredAt);
    // The attempt's outcome is recorded, the delivery stays cancelled.
    const [d] = await deliveriesOf(hook.id);
    expect(d!.status).toBe('cancelled');
    await svc.call('DELETE', `/tenant/webhooks/${hook.id}`, admin());
  });

  it('refuses to re-send a delivery about a profile that has since denied a category', async () => {
    const hook = await subscribe({ url: `${url}/resend`, consent_categories: ['analytics'] });
    const who = email();
    await ingest({ event_type: 'identify', event_name: 'x', identity: who });
    await waitUntil(async () => (await deliveriesOf(hook.id)).some((d) => d.status === 'delivered'), {
      what: 'the delivery',
    });
    const [d] = await deliveriesOf(hook.id);
    const { id } = await profileOf(who);
    expect((await putConsent(id, { analytics: false })).status).toBe(200);
    const res = await svc.call('POST', `/tenant/webhooks/${hook.id}/deliveries/${d!.id}/redeliver`, admin());
    expectError(res, 409, 'CONFLICT');
    expect((await putConsent(id, { analytics: true })).status).toBe(200);
    const again = await svc.call(
      'POST',
      `/tenant/webhooks/${hook.id}/deliveries/${d!.id}/redeliver`,
      admin(),
    );
    expect(again.status, again.text).toBe(200);
    await svc.call('DELETE', `/tenant/webhooks/${hook.id}`, admin());
  });
});
