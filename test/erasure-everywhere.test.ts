import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookPolicy } from '../src/modules/webhooks';
import { type Receiver, restartableService, startReceiver } from '../src/modules/webhooks/webhooks.test-kit';
import type { Db } from '../src/platform/db';
import { ENGINE } from './harness';
import { waitUntil } from './wait';

/**
 * Erasure forgets a person everywhere (docs/profiles.md, "Erasure"). One person comes in through
 * every entry point (native single and batch events, the Segment-style /v1 calls, an order, a group,
 * an API profile write and merge, webhooks that delivered their data and a retry still scheduled, a
 * dead-lettered event, events still waiting on the backlog), is erased with suppression, and then:
 * no table holds their identifiers, names or a marker value; no API returns or re-sends them; the
 * scheduled retry sends nothing; the events still waiting do not bring them back; their identifiers
 * stay blocked until the suppression is lifted.
 *
 * The service runs three times on the same storage: with its workers (the person's history), without
 * (events left waiting on the backlog, the erasure), with them again (the backlog and the retry run).
 */

const svc = restartableService();
let rx: Receiver;
const savedPolicy = { ...webhookPolicy, backoff: { ...webhookPolicy.backoff } };

const tag = randomUUID().slice(0, 8);
const person = {
  email: `erin.q${tag}@example.com`,
  phone: `+1415555${String(Number.parseInt(tag.slice(0, 4), 16) % 10_000).padStart(4, '0')}`,
  crm: `crm-${tag}`,
  anonymous: randomUUID(),
  first: `Erinmarker${tag}`,
  last: `Quillfeather${tag}`,
  marker: `MARKER-${tag}-7f3a`,
};
/** What must not be found anywhere once the person is erased (the phone as E.164 and as its digits). */
const needles = [
  person.email,
  person.phone,
  person.phone.slice(1),
  person.crm,
  person.anonymous,
  person.first,
  person.last,
  person.marker,
];

const db = (): Db => svc.runtime().deps.db;
/** The service shares Redis (rate limits, revocations) when the run has one: it must hold no one either. */
const redisEnv: Record<string, string> = process.env.TEST_REDIS_URL
  ? { REDIS_URL: process.env.TEST_REDIS_URL }
  : {};
const env = (extra: Record<string, string> = {}) => ({
  CDP_ALLOW_PRIVATE_WEBHOOKS: '1',
  ...redisEnv,
  ...extra,
});

/** Redis keys (and string values) holding `needle`; [] without Redis. */
async function redisHolding(needle: string): Promise<string[]> {
  if (!process.env.TEST_REDIS_URL) return [];
  const redis = new Redis(process.env.TEST_REDIS_URL);
  try {
    const found: string[] = [];
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'COUNT', 1000);
      cursor = next;
      for (const key of keys) {
        const value = (await redis.type(key)) === 'string' ? await redis.get(key) : '';
        if (`${key} ${value}`.toLowerCase().includes(needle.toLowerCase())) found.push(key);
      }
    } while (cursor !== '0');
    return found;
  } finally {
    redis.disconnect();
  }
}
const call = (method: string, url: string, body?: unknown) => svc.call(method, url, body);
const accepted = async (method: string, url: string, body?: unknown) => {
  const res = await call(method, url, body);
  expect(res.status, `${method} ${url}: ${res.text}`).toBeLessThan(300);
  return res;
};

async function waitProcessed(): Promise<void> {
  await waitUntil(
    async () =>
      (await db().query<{ n: number }>('SELECT count(*)::int AS n FROM event_backlog')).rows[0]!.n === 0,
    { what: 'the backlog to drain', timeoutMs: 30_000 },
  );
}

/** Every table of the schema whose rows, as text, contain `needle`, with how many. */
async function tablesHolding(needle: string): Promise<Record<string, number>> {
  const { rows } = await db().query<{ table_name: string }>(
    `SELECT table_name FROM information_schema.tables
      WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`,
  );
  const found: Record<string, number> = {};
  for (const { table_name: t } of rows) {
    const { rows: n } = await db().query<{ n: number }>(
      `SELECT count(*)::int AS n FROM "${t}" x WHERE position(lower($1) in lower(x::text)) > 0`,
      [needle],
    );
    if (n[0]!.n > 0) found[t] = n[0]!.n;
  }
  return found;
}

let profileId = '';
let mergedId = '';
let deadLetterId = '';
const delivered: { hook: string; delivery: string } = { hook: '', delivery: '' };
let failingHook = '';
let segmentId = '';
let erasedAt = 0;

beforeAll(async () => {
  rx = await startReceiver();
  // Retries within a second, so the one scheduled before the erasure comes due during the test.
  webhookPolicy.backoff = { baseMs: 300, capMs: 600 };
  await svc.start(env());
}, 60_000);

afterAll(async () => {
  Object.assign(webhookPolicy, savedPolicy);
  await svc.remove();
  await rx?.close();
});

describe(`erasing a person who came in every way (${ENGINE})`, () => {
  it('first takes their history in through every entry point', async () => {
    delivered.hook = (
      await accepted('POST', '/tenant/webhooks', {
        url: `${rx.url}/ok`,
        events: ['profile.created', 'profile.merged', 'order.completed', 'segment.entered'],
      })
    ).body.data.id;
    // This receiver fails until the end: its deliveries wait for a retry when the person is erased.
    rx.script(
      '/failing',
      Array.from({ length: 1_000 }, () => ({ status: 500 })),
    );
    failingHook = (
      await accepted('POST', '/tenant/webhooks', {
        url: `${rx.url}/failing`,
        events: ['profile.created', 'order.completed'],
      })
    ).body.data.id;
    segmentId = (
      await accepted('POST', '/tenant/segments', {
        name: `buyers ${tag}`,
        query: { field: 'total_spend', op: 'gt', value: 0 },
      })
    ).body.data.id;

    // Native, one event: who they are.
    await accepted('POST', '/api/ingest', {
      identity: person.email,
      event_type: 'identify',
      event_name: 'Signed Up',
      payload: { first_name: person.first, last_name: person.last, note: person.marker },
      // A consent category named after the marker: the choice is theirs too (profile_consent, events.consent).
      consent: { categories: { [`terms-${person.marker}`]: true } },
    });
    // Segment-style calls: an anonymous visit, then the same visitor identified by their CRM id.
    await accepted('POST', '/v1/page', {
      anonymousId: person.anonymous,
      name: 'Pricing',
      properties: { ref: person.marker },
    });
    await accepted('POST', '/v1/track', {
      anonymousId: person.anonymous,
      event: 'Viewed',
      properties: { what: person.marker },
      context: { consent: { categoryPreferences: { [`ads-${person.marker}`]: false } } },
    });
    await waitProcessed();
    // Native batch: the visitor signs in (the anonymous profile merges into theirs), then orders.
    await accepted('POST', '/tenant/ingest/batch', [
      {
        identity: person.email,
        anonymous_id: person.anonymous,
        event_type: 'track',
        event_name: 'Signed In',
      },
      {
        identity: person.email,
        event_type: 'order',
        event_name: 'Order Completed',
        payload: {
          order_id: `o-${tag}`,
          total: 42,
          items: [{ product_id: 'sku-1', name: 'Mug', price: 42, quantity: 1 }],
        },
      },
    ]);
    await waitProcessed();
    await accepted('POST', '/v1/identify', {
      userId: person.crm,
      anonymousId: person.anonymous,
      traits: { plan: person.marker },
    });
    await accepted('POST', '/v1/group', {
      userId: person.crm,
      groupId: `acme-${tag}`,
      traits: { name: 'Acme' },
    });
    await waitProcessed();
    const profile = (await accepted('GET', `/tenant/profiles?identity=${encodeURIComponent(person.email)}`))
      .body.data[0];
    profileId = profile.id;
    // An API write: a second record of them by phone, merged in through the API.
    mergedId = (
      await accepted('POST', '/tenant/profiles', { identity: person.phone, last_name: person.last })
    ).body.data.id;
    await accepted('POST', '/identity/merge', {
      primary_profile_id: profileId,
      secondary_profile_ids: [mergedId],
    });
    // A dead letter: identify events whose traits together pass the profile's size limit.
    const big = 'x'.repeat(30_000);
    await accepted(
      'POST',
      '/tenant/ingest/batch',
      Array.from({ length: 9 }, (_, i) => ({
        identity: person.email,
        event_type: 'identify',
        event_name: 'Bulk',
        payload: { [`blob${i}`]: big },
      })),
    );
    await waitProcessed();
    const letters = (await accepted('GET', '/tenant/dead-letters')).body.data;
    const letter = letters.find((d: { event: { identity: string } }) => d.event.identity === person.email);
    expect(letter, JSON.stringify(letters)).toBeDefined();
    deadLetterId = letter.id;

    // The webhooks carried their data: delivered to one receiver, waiting for a retry at the other.
    await waitUntil(() => rx.received.some((r) => r.path === '/ok' && r.body.includes(person.email)), {
      what: 'a delivery carrying the person',
    });
    await rx.waitFor('/failing', 1);
    const deliveries = (await accepted('GET', `/tenant/webhooks/${delivered.hook}/deliveries`)).body.data;
    delivered.delivery = deliveries.find((d: { status: string }) => d.status === 'delivered').id;
    const waiting = (await accepted('GET', `/tenant/webhooks/${failingHook}/deliveries`)).body.data;
    expect(waiting.some((d: { status: string }) => d.status === 'pending')).toBe(true);
    expect(await tablesHolding(person.email)).toMatchObject({ outbox: expect.any(Number) });
  }, 120_000);

  it('erases them while events of theirs still wait on the backlog', async () => {
    // Without workers: nothing is applied or sent while the service runs this way.
    await svc.stop();
    await svc.start(env({ ROLE: 'api' }));
    await accepted('POST', '/api/ingest', {
      identity: person.email,
      event_type: 'track',
      event_name: 'Still waiting',
      payload: { x: person.marker },
    });
    await accepted('POST', '/v1/track', {
      anonymousId: person.anonymous,
      event: 'Waiting too',
      properties: {},
    });
    const res = await accepted('DELETE', `/tenant/profiles/${mergedId}?suppress=true`);
    erasedAt = Date.now();
    expect(res.body.data).toMatchObject({ profile_id: profileId, suppressed: true });
    expect(res.body.data.erased_profile_ids.sort()).toEqual(
      expect.arrayContaining([profileId, mergedId].sort()),
    );
    expect(res.body.data.counts).toMatchObject({
      profiles: expect.any(Number),
      events: expect.any(Number),
      event_backlog: 2,
      dead_letters: 1,
      orders: 1,
      account_members: 1,
    });
    expect(res.body.data.counts.webhook_deliveries).toBeGreaterThanOrEqual(3);
    // Two choices: the anonymous profile's moved to theirs by the merge.
    expect(res.body.data.counts.profile_consent).toBe(2);
    expect(res.body.data.counts.outbox).toBeGreaterThanOrEqual(3);
  }, 60_000);

  it('leaves no table, and nothing in Redis, holding their identifiers, names or the marker', async () => {
    for (const needle of needles) {
      expect(await tablesHolding(needle), needle).toEqual({});
      expect(await redisHolding(needle), needle).toEqual([]);
    }
  });

  it('answers 404 or nothing wherever they could be read, and never sends them again', async () => {
    for (const id of [profileId, mergedId]) {
      for (const path of ['', '/events', '/lineage', '/export']) {
        expect((await call('GET', `/tenant/profiles/${id}${path}`)).status, path).toBe(404);
      }
      expect((await call('GET', `/identity/graph/${id}`)).status).toBe(404);
      expect((await call('GET', `/intelligence/clv/${id}`)).status).toBe(404);
    }
    for (const v of [person.email, person.phone, person.crm, person.anonymous]) {
      expect((await call('GET', `/tenant/profiles?identity=${encodeURIComponent(v)}`)).body.data).toEqual([]);
    }
    expect(
      (await call('GET', `/tenant/profiles?email=${encodeURIComponent(person.email)}`)).body.data,
    ).toEqual([]);
    expect(JSON.stringify((await call('GET', '/tenant/dead-letters')).body.data)).not.toContain(person.email);
    expect((await call('POST', `/tenant/dead-letters/${deadLetterId}/retry`)).status).toBe(404);
    const redeliver = await call(
      'POST',
      `/tenant/webhooks/${delivered.hook}/deliveries/${delivered.delivery}/redeliver`,
    );
    expect(redeliver.status).toBe(410);
    expect(redeliver.body.error_code).toBe('ERASED');
    const listed = (await call('GET', `/tenant/webhooks/${failingHook}/deliveries`)).body.data;
    expect(listed.every((d: { status: string }) => d.status === 'erased')).toBe(true);
    expect((await call('GET', `/tenant/segments/${segmentId}/members`)).body.data).toEqual([]);
    expect((await call('GET', `/tenant/accounts/acme-${tag}`)).body.data.members).toEqual([]);
    const orders = (await call('GET', '/tenant/orders')).body.data;
    expect(orders.find((o: { order_id: string }) => o.order_id === `o-${tag}`)).toMatchObject({
      profile_id: null,
    });
  });

  it('sends nothing about them once the workers run again: not the scheduled retry, not the waiting events', async () => {
    rx.script('/failing', []);
    const before = rx.received.length;
    await svc.stop();
    await svc.start(env());
    await waitProcessed();
    // The retry jobs planned before the erasure come due and run: each finds its delivery erased.
    await waitUntil(
      async () =>
        (
          await db().query<{ n: number }>(
            "SELECT count(*)::int AS n FROM jobs WHERE queue = 'webhooks.deliver' AND state IN ('queued', 'running')",
          )
        ).rows[0]!.n === 0,
      { what: 'every delivery job to have run', timeoutMs: 30_000 },
    );
    const after = rx.received.slice(before);
    expect(after.filter((r) => needles.some((n) => r.body.includes(n)))).toEqual([]);
    for (const needle of needles) expect(await tablesHolding(needle), needle).toEqual({});
    expect(Date.now()).toBeGreaterThan(erasedAt);
  }, 90_000);

  it('keeps their identifiers blocked until the suppression is lifted', async () => {
    await accepted('POST', '/api/ingest', {
      identity: person.email,
      event_type: 'track',
      event_name: 'Back',
    });
    await waitProcessed();
    expect(
      (await call('GET', `/tenant/profiles?identity=${encodeURIComponent(person.email)}`)).body.data,
    ).toEqual([]);
    expect((await call('POST', '/tenant/profiles', { identity: person.email })).status).toBe(409);

    const lifted = await call(
      'DELETE',
      `/tenant/suppressions/${encodeURIComponent(person.email.toUpperCase())}`,
    );
    expect(lifted.status, lifted.text).toBe(200);
    expect((await call('DELETE', `/tenant/suppressions/${encodeURIComponent(person.email)}`)).status).toBe(
      404,
    );
    await accepted('POST', '/api/ingest', {
      identity: person.email,
      event_type: 'track',
      event_name: 'Back again',
    });
    await waitProcessed();
    expect(
      (await call('GET', `/tenant/profiles?identity=${encodeURIComponent(person.email)}`)).body.data,
    ).toHaveLength(1);
  }, 60_000);
});
