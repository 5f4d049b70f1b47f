import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../../../test/expect-error';
import { startTestService, type TestService } from '../../../test/harness';
import { analyticsSlots } from '../../platform/http/analytics-share';
import { calculate } from './segments.read';
import { waitSegmentsSettled } from './segments.test-kit';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
  const events = Array.from({ length: 9 }, (_, i) => ({
    identity: `calc${i}@example.com`,
    event_type: 'identify',
    event_name: 'identify',
    payload: { plan: i % 3 === 0 ? 'free' : 'pro' },
  }));
  expect((await svc.call('POST', '/tenant/ingest/batch', { body: events })).status).toBe(202);
  await waitSegmentsSettled(svc.rt.deps.db);
});
afterAll(async () => svc?.close());

const PRO = { attribute: 'plan', op: 'eq', value: 'pro' };
const calc = (body: unknown, key?: string) =>
  svc.call('POST', '/tenant/segments/calculate', { body, ...(key ? { key } : {}) });

describe('POST /tenant/segments/calculate', () => {
  it('counts every match and pages them oldest first, never repeating a profile', async () => {
    const ids: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 5; page++) {
      const res = await calc({ query: PRO, limit: 4, ...(cursor ? { cursor } : {}) });
      expect(res.status, res.text).toBe(200);
      expect(res.body.data.count).toBe(6);
      ids.push(...res.body.data.profiles.map((p: { id: string }) => p.id));
      for (const p of res.body.data.profiles) expect(p.attributes.plan).toBe('pro');
      cursor = res.body.data.pagination.next_cursor ?? undefined;
      if (!res.body.data.pagination.has_more) break;
    }
    expect(ids).toHaveLength(6);
    expect(new Set(ids).size).toBe(6);
  });

  it('gives the same answer walking the workspace in slices of two profiles', async () => {
    const db = svc.rt.deps.db;
    const whole = await calculate(db, svc.rt.deps.cursors, svc.ws.id, { query: PRO, limit: 50 });
    const sliced = await calculate(
      db,
      svc.rt.deps.cursors,
      svc.ws.id,
      { query: PRO, limit: 50 },
      { sliceSize: 2 },
    );
    expect(sliced.count).toBe(whole.count);
    expect(sliced.profiles.map((p) => p.id)).toEqual(whole.profiles.map((p) => p.id));
  });

  it('refuses a cursor issued for another query', async () => {
    const first = await calc({ query: PRO, limit: 1 });
    const cursor = first.body.data.pagination.next_cursor;
    expectError(await calc({ query: { not: PRO }, limit: 1, cursor }), 400, 'INVALID_CURSOR');
  });

  it('refuses a bad query with the failing path, and an unknown segment reference', async () => {
    const res = await calc({ query: { or: [PRO, { attribute: 'plan', op: 'eq' }] } });
    expectError(res, 400, 'VALIDATION_ERROR');
    expect(res.body.details[0].path).toMatch(/^\/query\/or\/1/);
    expectError(await calc({ query: { segment: 'seg_missing' } }), 400, 'VALIDATION_ERROR');
  });

  it('needs an editor key: a viewer is refused', async () => {
    expectError(await calc({ query: PRO }, await svc.ws.key(['viewer'])), 403, 'INSUFFICIENT_SCOPE');
  });
});

describe('the cost of a calculation', () => {
  it('is bounded by its time budget: past it, 422 BUDGET_EXCEEDED saying what to do, and nothing held', async () => {
    const db = svc.rt.deps.db;
    const over = calculate(db, svc.rt.deps.cursors, svc.ws.id, { query: PRO }, { budgetMs: 0 });
    await expect(over).rejects.toMatchObject({
      code: 'BUDGET_EXCEEDED',
      status: 422,
      message: expect.stringMatching(/budget of 0 s .*save it as a segment/),
    });
    // The connection it had is free again: the next calculation answers.
    expect((await calc({ query: PRO })).body.data.count).toBe(6);
  });

  it('runs at most analytics_concurrency calculations and fits of a workspace at once: one more is 429 with Retry-After', async () => {
    const ws = await svc.newWorkspace('concurrency');
    const set = await svc.call('PATCH', '/tenant/settings', {
      key: ws.adminKey,
      body: { analytics_concurrency: 2 },
    });
    expect(set.status, set.text).toBe(200);
    // Two calculations of this workspace running (their slots taken as the route takes them).
    const running = [analyticsSlots.tryAcquire(ws.id, 2)!, analyticsSlots.tryAcquire(ws.id, 2)!];
    const refused = await calc({ query: PRO }, ws.adminKey);
    expectError(refused, 429, 'RATE_LIMITED');
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.body.message).toMatch(/at most 2 expensive operations .*analytics_concurrency/);
    // A model fit takes from the same share.
    expectError(
      await svc.call('POST', '/intelligence/models/fit', { key: ws.adminKey, body: {} }),
      429,
      'RATE_LIMITED',
    );
    // Another workspace has slots of its own.
    expect((await calc({ query: PRO })).status).toBe(200);
    running[0]!();
    expect((await calc({ query: PRO }, ws.adminKey)).status).toBe(200);
    // The route gave its slot back: one is still free.
    expect(analyticsSlots.held(ws.id)).toBe(1);
    running[1]!();
  });
});
