import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../../../test/harness';
import { appendEvents, type EventRecord, type NewEvent, normalizeEvent } from './index';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc?.close());

const db = () => svc.rt.deps.db;

/** A stored row: the log's record fields that normalisation decides, plus the append's own columns. */
type Stored = Omit<EventRecord, 'seq' | 'received_at'> & {
  message_id: string | null;
  api_key_id: string | null;
};

async function stored(workspaceId: string): Promise<Stored[]> {
  const { rows } = await db().query<Stored>(
    `SELECT id, message_id, event_type, event_name, anonymous_id, identity, payload, occurred_at, api_key_id
       FROM events WHERE workspace_id = $1 ORDER BY seq`,
    [workspaceId],
  );
  return rows;
}

/** Events that exercise every normalisation the log applies. */
const unnormalised = (): NewEvent[] => [
  {
    event_type: 'page',
    event_name: 'Home',
    anonymous_id: randomUUID().toUpperCase(),
    timestamp: '2024-05-01T14:00:00+02:00',
  },
  {
    event_type: 'order',
    event_name: 'Order Completed',
    identity: 'Buyer@Example.com',
    payload: { order_id: 'N-1', total: 12.5, currency: 'eur', status: ' Refunded ' },
  },
  {
    event_type: 'order',
    event_name: 'Order Completed',
    identity: 'buyer@example.com',
    payload: { order_id: 'N-2', total: 3 },
  },
];

const comparable = ({ id: _id, api_key_id: _key, occurred_at, ...rest }: Stored, at: Date) => ({
  ...rest,
  // Events without a timestamp take their time of receipt, which differs between the two roads.
  occurred_at: occurred_at.getTime() === at.getTime() ? 'receipt' : occurred_at.toISOString(),
});

describe('appending events', () => {
  it('stores an event exactly as the HTTP routes store it (one normalisation for every road)', async () => {
    const viaApi = await svc.newWorkspace('append-api');
    const viaFn = await svc.newWorkspace('append-fn');
    const events = unnormalised();
    const res = await svc.call('POST', '/tenant/ingest/batch', { key: viaApi.adminKey, body: events });
    expect(res.status, res.text).toBe(202);
    const receivedAt = new Date().toISOString();
    const { ids, duplicates } = await appendEvents(db(), events, { workspaceId: viaFn.id, receivedAt });
    expect(duplicates).toBe(0);

    const api = await stored(viaApi.id);
    const fn = await stored(viaFn.id);
    expect(fn.map((r) => r.id)).toEqual(ids);
    const apiReceipt = api[1]!.occurred_at;
    expect(fn.map((r) => comparable(r, new Date(receivedAt)))).toEqual(
      api.map((r) => comparable(r, apiReceipt)),
    );
    expect(fn[0]).toMatchObject({
      anonymous_id: events[0]!.anonymous_id!.toLowerCase(),
      occurred_at: new Date('2024-05-01T12:00:00Z'),
    });
    expect(fn[1]!.payload).toMatchObject({ currency: 'EUR', status: 'refunded' });
    expect(fn[2]!.payload).toMatchObject({ currency: 'USD', status: 'completed' });
    expect(fn[1]!.identity).toBe('Buyer@Example.com'); // kept as sent; the resolver classifies it
    expect(fn.every((r) => r.api_key_id === null)).toBe(true);
  });

  it('stores a message_id once, within a call, across calls and across roads', async () => {
    const ws = await svc.newWorkspace('append-dedupe');
    const ev = (message_id: string): NewEvent => ({
      event_type: 'track',
      event_name: 'Clicked',
      anonymous_id: randomUUID(),
      message_id,
    });
    const first = await appendEvents(db(), [ev('m-1'), ev('m-2'), ev('m-1')], { workspaceId: ws.id });
    expect(first.duplicates).toBe(1);
    expect(first.ids[2]).toBe(first.ids[0]);
    expect(new Set(first.ids).size).toBe(2);

    const again = await appendEvents(db(), [ev('m-2'), ev('m-3')], { workspaceId: ws.id });
    expect(again.duplicates).toBe(1);
    expect(again.ids[0]).toBe(first.ids[1]);

    const res = await svc.call('POST', '/api/ingest', { key: ws.adminKey, body: ev('m-3') });
    expect(res.status).toBe(202);
    expect(res.body.event_id).toBe(again.ids[1]);
    expect((await stored(ws.id)).map((r) => r.message_id)).toEqual(['m-1', 'm-2', 'm-3']);
  });

  it('refuses invalid events as the routes do, naming each, and stores none of the call', async () => {
    const ws = await svc.newWorkspace('append-invalid');
    const err = await appendEvents(
      db(),
      [
        { event_type: 'track', event_name: 'ok', anonymous_id: randomUUID() },
        { event_type: 'order', event_name: 'bad', identity: 'a', payload: { order_id: 'x', total: -1 } },
        { event_type: 'track', event_name: 'no one' },
      ],
      { workspaceId: ws.id },
    ).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'VALIDATION_ERROR', status: 400 });
    expect((err as { details: Array<{ path: string }> }).details.map((d) => d.path)).toEqual([
      '/1/payload/total',
      '/2/identity',
    ]);
    expect(await stored(ws.id)).toEqual([]);
  });

  it('skips the rules only when asked (tests of the worker’s defences), still normalising', async () => {
    const ws = await svc.newWorkspace('append-unchecked');
    const { ids } = await appendEvents(
      db(),
      [{ event_type: 'order', event_name: 'huge', identity: 'a', payload: { order_id: 'x', total: 1e308 } }],
      { workspaceId: ws.id, validate: false },
    );
    const [row] = await stored(ws.id);
    expect(row).toMatchObject({
      id: ids[0],
      payload: { total: 1e308, currency: 'USD', status: 'completed' },
    });
  });

  it('normalises without I/O, and leaves a valid event’s other fields as sent', () => {
    const row = normalizeEvent(
      { event_type: 'identify', event_name: 'Signed Up', identity: ' crm-1 ', payload: { plan: 'pro' } },
      { workspaceId: 'w', apiKeyId: 'key_1', receivedAt: '2025-01-01T00:00:00.000Z' },
    );
    expect(row).toMatchObject({
      id: expect.stringMatching(/^evt_/),
      workspace_id: 'w',
      message_id: null,
      identity: ' crm-1 ',
      anonymous_id: null,
      payload: { plan: 'pro' },
      occurred_at: '2025-01-01T00:00:00.000Z',
      received_at: '2025-01-01T00:00:00.000Z',
      api_key_id: 'key_1',
    });
  });
});
