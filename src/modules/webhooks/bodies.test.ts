import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService, type TestWorkspace } from '../../../test/harness';
import { waitProcessed } from '../processing/processing.test-kit';
import { waitSegmentsSettled } from '../segments/segments.test-kit';
import { webhookPolicy } from './policy';
import { type Receiver, startReceiver, subscribeTo } from './webhooks.test-kit';

/**
 * What each kind of webhook carries: enough for a receiver to act without calling the API back,
 * within a documented size, and exactly as docs/webhooks.md shows it (its examples were taken from
 * this test: set WEBHOOK_EXAMPLES=<file> to write the bodies it received).
 */
webhookPolicy.backoff = { baseMs: 50, capMs: 200 };

let svc: TestService;
let rx: Receiver;
beforeAll(async () => {
  [svc, rx] = await Promise.all([startTestService({ CDP_ALLOW_PRIVATE_WEBHOOKS: '1' }), startReceiver()]);
});
afterAll(async () => {
  await Promise.all([svc?.close(), rx?.close()]);
});

const KINDS = [
  'profile.created',
  'profile.merged',
  'order.completed',
  'segment.entered',
  'segment.exited',
  'churn.risk_escalated',
];
const GUEST = '5f0c9a4e-8d1b-4c2e-9f3a-7b6d5e4c3b2a';
const DOCS = join(import.meta.dirname, '../../../docs/webhooks.md');
/** The most a delivered body may weigh (docs/webhooks.md, "Size"). */
const MAX_BODY_BYTES = 64 * 1024;

type Body = {
  id: string;
  type: string;
  created_at: string;
  workspace_id: string;
  // biome-ignore lint/suspicious/noExplicitAny: test bodies are inspected field by field
  data: Record<string, any>;
};

async function ingest(ws: TestWorkspace, event: Record<string, unknown>): Promise<void> {
  const res = await svc.call('POST', '/api/ingest', { key: ws.adminKey, body: event });
  expect(res.status, res.text).toBe(202);
}

async function settle(): Promise<void> {
  await waitProcessed(svc.rt.deps.db);
  await waitSegmentsSettled(svc.rt.deps.db);
}

/** The bodies delivered to `path`, once at least `n` arrived, parsed. */
async function bodies(path: string, n: number): Promise<Body[]> {
  return (await rx.waitFor(path, n)).map((r) => JSON.parse(r.body) as Body);
}

/**
 * Where two bodies differ in shape: keys missing on either side, or values of another type (a null
 * matches anything: a nullable field may be null in one body and set in the other). Arrays compare
 * their first elements.
 */
function shapeDiff(a: unknown, b: unknown, path = ''): string[] {
  if (a === null || b === null) return [];
  // A profile's attributes are the customer's own keys: which ones a body has depends on the profile.
  if (path.endsWith('/attributes'))
    return typeof a === typeof b ? [] : [`${path}: ${typeof a} documented, ${typeof b} received`];
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b)) return [`${path}: array on one side only`];
    return a.length === 0 || b.length === 0 ? [] : shapeDiff(a[0], b[0], `${path}/0`);
  }
  if (typeof a === 'object' && typeof b === 'object') {
    const ka = Object.keys(a as object);
    const kb = Object.keys(b as object);
    return [
      ...ka.filter((k) => !kb.includes(k)).map((k) => `${path}/${k}: only in the documented body`),
      ...kb.filter((k) => !ka.includes(k)).map((k) => `${path}/${k}: only in the real body`),
      ...ka
        .filter((k) => kb.includes(k))
        .flatMap((k) =>
          shapeDiff((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], `${path}/${k}`),
        ),
    ];
  }
  return typeof a === typeof b ? [] : [`${path}: ${typeof a} documented, ${typeof b} received`];
}

/** The JSON examples docs/webhooks.md gives per kind, in the section "What each kind carries". */
function documentedExamples(): Map<string, unknown> {
  const text = readFileSync(DOCS, 'utf8');
  const out = new Map<string, unknown>();
  for (const m of text.matchAll(/```json webhook\n([\s\S]*?)```/g)) {
    const body = JSON.parse(m[1]!) as Body;
    out.set(body.type, body);
  }
  return out;
}

describe('the body of each kind of webhook', () => {
  let ws: TestWorkspace;
  const byType = new Map<string, Body[]>();

  beforeAll(async () => {
    ws = await svc.newWorkspace('bodies');
    await subscribeTo(svc, rx, ws, '/all', { events: KINDS });
    const seg = await svc.call('POST', '/tenant/segments', {
      key: ws.adminKey,
      body: { name: 'Spent 40 or more', query: { field: 'total_spend', op: 'gte', value: 40 } },
    });
    expect(seg.status, seg.text).toBe(200);
    await ingest(ws, {
      identity: 'ada@example.com',
      event_type: 'identify',
      event_name: 'Signed Up',
      payload: { first_name: 'Ada', last_name: 'Lovelace', plan: 'pro', phone: '+44 20 7946 0018' },
    });
    await ingest(ws, { anonymous_id: GUEST, event_type: 'page', event_name: 'Pricing' });
    await ingest(ws, {
      anonymous_id: GUEST,
      event_type: 'order',
      event_name: 'Order Completed',
      payload: {
        order_id: 'ord-1001',
        total: 42.5,
        currency: 'EUR',
        items: [{ product_id: 'sku-1', name: 'Mug', price: 42.5, quantity: 1, category: 'kitchen' }],
      },
    });
    await settle();
    await ingest(ws, {
      anonymous_id: GUEST,
      identity: 'ada@example.com',
      event_type: 'identify',
      event_name: 'Signed In',
    });
    await settle();
    await ingest(ws, {
      identity: 'ada@example.com',
      event_type: 'order',
      event_name: 'Order Refunded',
      payload: { order_id: 'ord-1001', total: 42.5, currency: 'EUR', status: 'refunded' },
    });
    await settle();
    // Grace bought twice, long ago: a fit as of now finds her lapsed.
    for (const [id, days] of [
      ['ord-17', 400],
      ['ord-23', 380],
    ] as const) {
      await ingest(ws, {
        identity: 'grace@example.com',
        event_type: 'order',
        event_name: 'Order Completed',
        timestamp: new Date(Date.now() - days * 86_400_000).toISOString(),
        payload: { order_id: id, total: 12 },
      });
    }
    await settle();
    const fit = await svc.call('POST', '/intelligence/models/fit', { key: ws.adminKey, body: {} });
    expect(fit.status, fit.text).toBe(200);
    // 3 created, 1 merged, 3 orders, the guest entered then exited (merged away), Ada entered then
    // exited (refund), Grace escalated.
    for (const b of await bodies('/all', 12)) byType.set(b.type, [...(byType.get(b.type) ?? []), b]);
    if (process.env.WEBHOOK_EXAMPLES) {
      const first = Object.fromEntries(KINDS.map((k) => [k, byType.get(k)?.[0]]));
      writeFileSync(process.env.WEBHOOK_EXAMPLES, JSON.stringify(first, null, 2));
    }
  }, 60_000);

  it('profile.created carries the new profile: id, e-mail, names, attributes and identifiers', () => {
    const ada = byType.get('profile.created')!.find((b) => b.data.profile.email === 'ada@example.com')!;
    expect(ada.data).toMatchObject({
      profile_id: ada.data.profile.id,
      profile: {
        first_name: 'Ada',
        last_name: 'Lovelace',
        attributes: { plan: 'pro', phone: '+44 20 7946 0018' },
        attributes_omitted: false,
        identities: [{ type: 'email', value: 'ada@example.com' }],
        identities_omitted: 0,
      },
    });
    expect(ada.data.source_event_id).toMatch(/^evt_/);
  });

  it('profile.merged carries the survivor, the merged ids and the survivor’s identifiers', () => {
    const [merged] = byType.get('profile.merged')!;
    const guest = byType.get('profile.created')!.find((b) => b.data.profile.email === null)!;
    expect(merged!.data).toMatchObject({
      merged_profile_ids: [guest.data.profile_id],
      profile: { email: 'ada@example.com', first_name: 'Ada' },
    });
    expect(merged!.data.primary_profile_id).toBe(merged!.data.profile.id);
    expect(merged!.data.profile.identities).toEqual(
      expect.arrayContaining([
        { type: 'email', value: 'ada@example.com' },
        { type: 'anonymous_id', value: GUEST },
      ]),
    );
  });

  it('order.completed carries the order with its items and who placed it', () => {
    const [order] = byType.get('order.completed')!;
    expect(order!.data).toMatchObject({
      order_id: 'ord-1001',
      status: 'completed',
      total: 42.5,
      currency: 'EUR',
      items: [{ product_id: 'sku-1', name: 'Mug', price: 42.5, quantity: 1, category: 'kitchen' }],
      items_omitted: 0,
    });
    expect(order!.data.profile).toEqual({
      id: order!.data.profile_id,
      email: null,
      first_name: null,
      last_name: null,
    });
  });

  it('segment.entered and segment.exited name the segment and say who the profile is', () => {
    const entered = byType.get('segment.entered')!;
    const exited = byType.get('segment.exited')!;
    for (const b of [...entered, ...exited]) {
      expect(b.data.segment_name).toBe('Spent 40 or more');
      expect(b.data.segment_id).toMatch(/^seg_/);
      expect(b.data.profile).toEqual(expect.objectContaining({ id: expect.any(String) }));
    }
    const adaIn = entered.find((b) => b.data.profile.email === 'ada@example.com')!;
    expect(adaIn.data.profile).toMatchObject({ first_name: 'Ada', last_name: 'Lovelace' });
  });

  it('churn.risk_escalated carries the score, the score before, the threshold, the model and who it is', () => {
    const [churn] = byType.get('churn.risk_escalated')!;
    expect(churn!.data.churn_risk_score).toBeGreaterThanOrEqual(churn!.data.threshold);
    expect(churn!.data).toMatchObject({ threshold: 0.7, profile: { email: 'grace@example.com' } });
    expect(churn!.data.fit_id).toMatch(/^fit_/);
    expect(typeof churn!.data.model).toBe('string');
    const before = churn!.data.previous_churn_risk_score;
    expect(before === null || before < churn!.data.threshold).toBe(true);
  });

  it('is documented in docs/webhooks.md by a body of the same shape, for every kind', () => {
    const docs = documentedExamples();
    for (const kind of KINDS) {
      expect(docs.has(kind), `docs/webhooks.md has an example of ${kind}`).toBe(true);
      expect(shapeDiff(docs.get(kind), byType.get(kind)![0]), kind).toEqual([]);
    }
  });
});

describe('the size of a webhook body', () => {
  it('stays within 64 KiB for a profile whose attributes are too big to carry, and says so', async () => {
    const ws = await svc.newWorkspace('big bodies');
    await subscribeTo(svc, rx, ws, '/big', { events: ['profile.created'] });
    const wide = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${i}`, 'x'.repeat(170)]));
    await ingest(ws, {
      identity: 'wide@example.com',
      event_type: 'identify',
      event_name: 'Wide',
      payload: wide,
    });
    await settle();
    const [received] = await rx.waitFor('/big', 1);
    expect(Buffer.byteLength(received!.body)).toBeLessThanOrEqual(MAX_BODY_BYTES);
    const created = JSON.parse(received!.body) as Body;
    expect(created.data.profile).toMatchObject({
      email: 'wide@example.com',
      attributes: null,
      attributes_omitted: true,
    });
  });
});
