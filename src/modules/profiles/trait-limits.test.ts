import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../../../test/expect-error';
import { startTestService, type TestService } from '../../../test/harness';
import { insertTestEvents, waitProcessed } from '../processing/processing.test-kit';
import { TRAIT_LIMITS } from './traits';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc?.close());

/** `n` trait keys in all: one group key holding n − 1 keys. */
const traits = (n: number) => ({
  group: Object.fromEntries(Array.from({ length: n - 1 }, (_, i) => [`k${i}`, i])),
});
const identify = (payload: Record<string, unknown>) => ({
  event_type: 'identify',
  event_name: 'Traits',
  identity: 'limits@example.com',
  payload,
});
const profileBy = async (identity: string) =>
  (await svc.call('GET', `/tenant/profiles?identity=${encodeURIComponent(identity)}`)).body.data[0];

describe('trait keys per write', () => {
  it('refuses an identify event with more than 1,000 trait keys, nested ones counted', async () => {
    expect(TRAIT_LIMITS.keysPerWrite).toBe(1000);
    expect((await svc.call('POST', '/api/ingest', { body: identify(traits(1000)) })).status).toBe(202);
    const res = await svc.call('POST', '/api/ingest', { body: identify(traits(1001)) });
    expectError(res, 400, 'VALIDATION_ERROR');
    expect(res.body.details).toEqual([
      {
        path: '/payload',
        message: expect.stringMatching(/at most 1000 trait keys.*limit: trait keys per write/),
      },
    ]);
  });

  it('names the batch item whose identify payload has too many keys', async () => {
    const res = await svc.call('POST', '/tenant/ingest/batch', {
      body: [identify({ a: 1 }), identify(traits(1001)), { ...identify(traits(1001)), event_type: 'track' }],
    });
    expectError(res, 400, 'VALIDATION_ERROR');
    expect(res.body.details.map((d: { path: string }) => d.path)).toEqual(['/1/payload']);
  });

  it('refuses a profile write with more than 1,000 attribute keys, nested ones counted', async () => {
    const ok = await svc.call('POST', '/tenant/profiles', {
      body: { identity: 'crm-keys', attributes: traits(1000) },
    });
    expect(ok.status).toBe(200);
    const res = await svc.call('POST', '/tenant/profiles', {
      body: { identity: 'crm-keys', attributes: traits(1001) },
    });
    expectError(res, 400, 'VALIDATION_ERROR');
    expect(res.body.details[0].path).toBe('/attributes');
    expect(res.body.details[0].message).toMatch(/limit: trait keys per write/);
  });

  it('refuses attributes nested deeper than 10 levels', async () => {
    let deep: Record<string, unknown> = { leaf: 1 };
    for (let i = 0; i < 11; i++) deep = { d: deep };
    const res = await svc.call('POST', '/tenant/profiles', {
      body: { identity: 'crm-deep', attributes: deep },
    });
    expectError(res, 400, 'VALIDATION_ERROR');
    expect(res.body.details[0].message).toMatch(/deeper than 10 levels/);
  });
});

describe('attributes per profile', () => {
  const big = (n: number, from = 0) =>
    Object.fromEntries(Array.from({ length: n }, (_, i) => [`big${from + i}`, 'x'.repeat(30_000)]));

  it('refuses a profile write that would take the attributes past 256 KiB, and applies the ones that do not', async () => {
    expect(TRAIT_LIMITS.profileAttributesBytes).toBe(262_144);
    const first = await svc.call('POST', '/tenant/profiles', {
      body: { identity: 'crm-big', attributes: big(8) },
    });
    expect(first.status).toBe(200);
    const res = await svc.call('POST', '/tenant/profiles', {
      body: { identity: 'crm-big', first_name: 'Never', attributes: big(1, 8) },
    });
    expectError(res, 400, 'VALIDATION_ERROR');
    expect(res.body.details[0]).toEqual({
      path: '/attributes',
      message: expect.stringMatching(/over the limit of 262144 \(limit: attributes per profile\)/),
    });
    // Nothing of the refused write stays, the name included.
    const after = await profileBy('crm-big');
    expect(Object.keys(after.attributes)).toHaveLength(8);
    expect(after.first_name).toBeNull();
    // A write that does not grow the profile still applies.
    const shrink = await svc.call('POST', '/tenant/profiles', {
      body: { identity: 'crm-big', attributes: { big0: 'short' } },
    });
    expect(shrink.status).toBe(200);
    expect(shrink.body.data.attributes.big0).toBe('short');
  });

  it('dead-letters an identify event that would take a profile past the limit, and applies the rest', async () => {
    const identity = 'worker-big@example.com';
    expect(
      (await svc.call('POST', '/tenant/profiles', { body: { identity, attributes: big(8) } })).status,
    ).toBe(200);
    const [, refusedId] = await insertTestEvents(svc.rt.deps.db, svc.ws.id, [
      { identity, event_type: 'identify', event_name: 'A', payload: { plan: 'pro' } },
      {
        identity,
        event_type: 'identify',
        event_name: 'B',
        payload: { first_name: 'Never', extra: 'y'.repeat(30_000) },
      },
      { identity, event_type: 'identify', event_name: 'C', payload: { big1: 'short' } },
    ]);
    await waitProcessed(svc.rt.deps.db);
    const p = await profileBy(identity);
    expect(p.attributes.plan).toBe('pro');
    expect(p.attributes.big1).toBe('short');
    expect(p.attributes.extra).toBeUndefined();
    expect(p.first_name).toBeNull();
    const dl = (await svc.call('GET', '/tenant/dead-letters?limit=500')).body.data.find(
      (d: { event: { id: string } }) => d.event.id === refusedId,
    );
    expect(dl.reason).toMatch(/over the limit of 262144 \(limit: attributes per profile\)/);
  });
});
