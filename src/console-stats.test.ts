import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../test/expect-error';
import { startTestService, type TestService } from '../test/harness';
import { settle } from '../test/settle';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc?.close());

const event = (i: number, extra: Record<string, unknown> = {}) => ({
  event_type: 'track',
  event_name: 'Viewed',
  identity: `stats-${i}@example.com`,
  ...extra,
});

describe('GET /tenant/stats', () => {
  it('counts the workspace’s events per minute, profiles, revenue, backlog and dead letters', async () => {
    const ws = await svc.newWorkspace('stats');
    const batch = [
      ...Array.from({ length: 5 }, (_, i) => event(i)),
      event(9, {
        event_type: 'order',
        event_name: 'Order Completed',
        payload: { order_id: 'S-1', total: 20.25, currency: 'EUR' },
      }),
      event(9, {
        event_type: 'order',
        event_name: 'Order Completed',
        payload: { order_id: 'S-2', total: 5, currency: 'EUR' },
      }),
    ];
    const sent = await svc.call('POST', '/tenant/ingest/batch', { key: ws.adminKey, body: batch });
    expect(sent.status).toBe(202);
    // An event with no identifier (the API refuses one; an older writer did not): a dead letter.
    await svc.rt.deps.db.query(
      `INSERT INTO events (id, workspace_id, event_type, event_name, occurred_at)
       VALUES ('evt_stats_lost', $1, 'track', 'Lost', now())`,
      [ws.id],
    );
    // Another workspace's traffic is not counted.
    await svc.call('POST', '/tenant/ingest/batch', { body: [event(100), event(101)] });

    const before = await svc.call('GET', '/tenant/stats', { key: ws.adminKey });
    expect(before.status).toBe(200);
    const series = before.body.data.events_per_minute as Array<{ minute: string; count: number }>;
    expect(series).toHaveLength(60);
    const minutes = series.map((m) => Date.parse(m.minute));
    expect(minutes.every((t, i) => i === 0 || t - minutes[i - 1]! === 60_000)).toBe(true);
    expect(Date.now() - minutes[59]!).toBeLessThan(60_000);
    expect(series.reduce((n, m) => n + m.count, 0)).toBe(batch.length + 1);

    await settle(svc.rt.deps.db);
    const after = await svc.call('GET', '/tenant/stats', { key: await ws.key(['viewer']) });
    expect(after.status).toBe(200);
    expect(after.body.data).toMatchObject({
      revenue: [{ currency: 'EUR', total: 25.25, orders: 2 }],
      ingestion_backlog: 0,
      processing_lag_seconds: null,
      dead_letters: 1,
    });
  });

  it('counts profiles, new ones today included', async () => {
    const ws = await svc.newWorkspace('stats-profiles');
    await svc.call('POST', '/tenant/ingest/batch', {
      key: ws.adminKey,
      body: [event(1), event(2), event(3)],
    });
    await settle(svc.rt.deps.db);
    const res = await svc.call('GET', '/tenant/stats', { key: ws.adminKey });
    expect(res.body.data).toMatchObject({ profiles: 3, profiles_new_today: 3, revenue: [], dead_letters: 0 });
  });

  it('reports the backlog and the age of its oldest event while processing waits', async () => {
    // An API-only process: nothing processes, so the backlog stays as it is.
    const api = await startTestService({ ROLE: 'api' });
    try {
      await api.rt.deps.db.query(
        `INSERT INTO events (id, workspace_id, event_type, event_name, identity, occurred_at, received_at)
         SELECT 'evt_backlog_' || i, $1, 'track', 'Waiting', 'w' || i || '@example.com', now(), now() - interval '90 seconds'
           FROM generate_series(1, 3) i`,
        [api.ws.id],
      );
      const res = await api.call('GET', '/tenant/stats');
      expect(res.body.data.ingestion_backlog).toBe(3);
      expect(res.body.data.processing_lag_seconds).toBeGreaterThanOrEqual(89);
      expect(res.body.data.processing_lag_seconds).toBeLessThan(200);
    } finally {
      await api.close();
    }
  });

  it('is readable by a viewer key and refused to an ingest-only key', async () => {
    expect((await svc.call('GET', '/tenant/stats', { key: await svc.ws.key(['viewer']) })).status).toBe(200);
    expectError(
      await svc.call('GET', '/tenant/stats', { key: await svc.ws.key(['ingest']) }),
      403,
      'INSUFFICIENT_SCOPE',
    );
  });
});
