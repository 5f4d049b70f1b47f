import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import type { FastifySchemaValidationError } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../../../test/harness';
import { validationDetails } from '../../platform/http/errors-handler';
import { newSortableId } from '../../platform/ids';
import { patchSettings } from '../workspaces';
import type { EventRecord } from './event-record';
import type { NewEventRow } from './ingest.repo';
import { checkBatchItems } from './ingest.routes';
import { checkBatch } from './ingest.rules';
import { IngestBatchSchema } from './ingest.schemas';
import { createEventWriter } from './ingest.service';

let svc: TestService;
let ingestKey: string;
beforeAll(async () => {
  svc = await startTestService();
  ingestKey = await svc.ws.key(['ingest']);
});
afterAll(async () => svc?.close());

const anon = () => randomUUID();
const track = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  event_type: 'track',
  event_name: 'Product Viewed',
  anonymous_id: anon(),
  ...extra,
});

/** A stored row: the log's one record shape plus the columns these tests check. */
interface StoredEvent extends EventRecord {
  workspace_id: string;
  message_id: string | null;
  api_key_id: string;
}

async function stored(ids: string[]): Promise<StoredEvent[]> {
  const { rows } = await svc.rt.deps.db.query<StoredEvent>(
    'SELECT * FROM events WHERE id = ANY($1::text[]) ORDER BY seq',
    [ids],
  );
  return rows;
}

async function countEvents(where = 'true', params: unknown[] = []): Promise<number> {
  const { rows } = await svc.rt.deps.db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM events WHERE ${where}`,
    params,
  );
  return rows[0]!.n;
}

describe('POST /api/ingest', () => {
  it('answers 202 with an evt_ id once the event is stored, exactly as sent', async () => {
    const anonymousId = randomUUID().toUpperCase();
    const res = await svc.call('POST', '/api/ingest', {
      key: ingestKey,
      body: {
        event_type: 'track',
        event_name: 'Product Viewed',
        anonymous_id: anonymousId,
        identity: 'Ada@Example.com',
        payload: { sku: 'A-1', price: 12.5, tags: ['x', { deep: true }] },
        timestamp: '2019-03-04T05:06:07.000+02:00',
      },
    });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ status: 'enqueued', event_id: expect.stringMatching(/^evt_[0-9a-z]{26}$/) });
    const [row] = await stored([res.body.event_id]);
    expect(row).toMatchObject({
      workspace_id: svc.ws.id,
      event_type: 'track',
      event_name: 'Product Viewed',
      anonymous_id: anonymousId.toLowerCase(),
      identity: 'Ada@Example.com',
      payload: { sku: 'A-1', price: 12.5, tags: ['x', { deep: true }] },
      message_id: null,
    });
    expect(row!.occurred_at.toISOString()).toBe('2019-03-04T03:06:07.000Z');
    expect(row!.api_key_id).toMatch(/^key_/);
  });

  it('uses the time of receipt when the event carries no timestamp', async () => {
    const before = Date.now();
    const res = await svc.call('POST', '/api/ingest', { key: ingestKey, body: track() });
    const [row] = await stored([res.body.event_id]);
    expect(row!.occurred_at.getTime()).toBe(row!.received_at.getTime());
    expect(row!.occurred_at.getTime()).toBeGreaterThanOrEqual(before - 5);
    expect(row!.occurred_at.getTime()).toBeLessThanOrEqual(Date.now() + 5);
  });

  it('accepts an event identified only by identity, and an admin key', async () => {
    const res = await svc.call('POST', '/api/ingest', {
      body: { event_type: 'identify', event_name: 'Signed Up', identity: '+44 20 7946 0958' },
    });
    expect(res.status).toBe(202);
  });

  it('stores order events with the documented defaults made explicit', async () => {
    const res = await svc.call('POST', '/api/ingest', {
      key: ingestKey,
      body: {
        event_type: 'order',
        event_name: 'Order Completed',
        identity: 'buyer@example.com',
        payload: {
          order_id: 'o-1',
          total: 42.5,
          currency: 'eur',
          items: [{ product_id: 'p-1', name: 'Mug', price: 21.25, quantity: 2, category: 'kitchen' }],
        },
      },
    });
    expect(res.status).toBe(202);
    const [row] = await stored([res.body.event_id]);
    expect(row!.payload).toMatchObject({
      order_id: 'o-1',
      total: 42.5,
      currency: 'EUR',
      status: 'completed',
    });
    const bare = await svc.call('POST', '/api/ingest', {
      key: ingestKey,
      body: {
        event_type: 'order',
        event_name: 'Order',
        identity: 'b@x.io',
        payload: { order_id: 'o-2', total: 0 },
      },
    });
    const [row2] = await stored([bare.body.event_id]);
    expect(row2!.payload).toEqual({ order_id: 'o-2', total: 0, currency: 'USD', status: 'completed' });
  });

  const future = new Date(Date.now() + 3 * 24 * 3600 * 1000).toISOString();
  it.each([
    ['no event_type', '/event_type', { event_name: 'x', anonymous_id: randomUUID() }],
    ['an unknown event_type', '/event_type', track({ event_type: 'click' })],
    ['no event_name', '/event_name', { event_type: 'track', anonymous_id: randomUUID() }],
    ['an empty event_name', '/event_name', track({ event_name: '' })],
    ['an event_name over 200 characters', '/event_name', track({ event_name: 'n'.repeat(201) })],
    ['neither identity nor anonymous_id', '/identity', { event_type: 'track', event_name: 'x' }],
    [
      'a blank identity and no anonymous_id',
      '/identity',
      { event_type: 'track', event_name: 'x', identity: '  ' },
    ],
    ['an anonymous_id that is no UUID', '/anonymous_id', track({ anonymous_id: 'cookie-123' })],
    ['a urn: prefixed UUID', '/anonymous_id', track({ anonymous_id: `urn:uuid:${randomUUID()}` })],
    ['an identity over 200 characters', '/identity', track({ identity: 'i'.repeat(201) })],
    ['an unknown top-level field', '/userId', track({ userId: 'u1' })],
    ['a payload that is an array', '/payload', track({ payload: [1, 2] })],
    ['a timestamp without offset', '/timestamp', track({ timestamp: '2024-01-01T10:00:00' })],
    ['a timestamp that is no date', '/timestamp', track({ timestamp: 'yesterday' })],
    ['a timestamp far in the future', '/timestamp', track({ timestamp: future })],
    [
      'a leap-second timestamp JavaScript cannot read',
      '/timestamp',
      track({ timestamp: '2016-12-31T23:59:60Z' }),
    ],
    ['a timestamp before 1970', '/timestamp', track({ timestamp: '1969-12-31T23:59:59Z' })],
    ['a message_id over 200 characters', '/message_id', track({ message_id: 'm'.repeat(201) })],
    ['a NUL character in the payload', '/payload/a/b', track({ payload: { a: { b: 'x\u0000y' } } })],
    ['an unpaired surrogate in the payload', '/payload/s', track({ payload: { s: 'x\ud800' } })],
    ['a NUL character in event_name', '/event_name', track({ event_name: 'a\u0000' })],
    ['a payload nested 11 levels deep', '/payload/k/k/k/k/k/k/k/k/k/k', track({ payload: nest(11) })],
    ['an order without payload', '/payload', { event_type: 'order', event_name: 'o', identity: 'a@b.co' }],
    ['an order without order_id', '/payload/order_id', order({ total: 1 })],
    ['an order without total', '/payload/total', order({ order_id: 'o' })],
    ['an order with a negative total', '/payload/total', order({ order_id: 'o', total: -1 })],
    ['an order with a string total', '/payload/total', order({ order_id: 'o', total: '9.99' })],
    [
      'an order with a bad currency',
      '/payload/currency',
      order({ order_id: 'o', total: 1, currency: 'EURO' }),
    ],
    [
      'an order with an unknown status',
      '/payload/status',
      order({ order_id: 'o', total: 1, status: 'shipped' }),
    ],
    [
      'an order item without product_id',
      '/payload/items/0/product_id',
      order({ order_id: 'o', total: 1, items: [{ name: 'x' }] }),
    ],
    [
      'an order item with a fractional quantity',
      '/payload/items/0/quantity',
      order({ order_id: 'o', total: 1, items: [{ product_id: 'p', quantity: 1.5 }] }),
    ],
  ])('refuses %s with 400 VALIDATION_ERROR at %s', async (_what, path, body) => {
    const before = await countEvents();
    const res = await svc.call('POST', '/api/ingest', { key: ingestKey, body });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ status: 'error', error_code: 'VALIDATION_ERROR' });
    expect(res.body.details.map((d: { path: string }) => d.path)).toContain(path);
    expect(await countEvents()).toBe(before);
  });

  it('accepts historical timestamps and a little clock skew', async () => {
    for (const timestamp of ['1997-01-01T00:00:00Z', new Date(Date.now() + 3600_000).toISOString()]) {
      const res = await svc.call('POST', '/api/ingest', { key: ingestKey, body: track({ timestamp }) });
      expect(res.status).toBe(202);
    }
  });

  it('refuses a body over 32 KiB with 413 PAYLOAD_TOO_LARGE', async () => {
    const res = await svc.call('POST', '/api/ingest', {
      key: ingestKey,
      body: track({ payload: { blob: 'x'.repeat(33 * 1024) } }),
    });
    expect(res.status).toBe(413);
    expect(res.body.error_code).toBe('PAYLOAD_TOO_LARGE');
  });

  it('refuses keys without the ingest scope, and requests without a key', async () => {
    const viewer = await svc.ws.key(['viewer']);
    expect((await svc.call('POST', '/api/ingest', { key: viewer, body: track() })).body.error_code).toBe(
      'INSUFFICIENT_SCOPE',
    );
    expect((await svc.call('POST', '/api/ingest', { key: null, body: track() })).status).toBe(401);
  });
});

function nest(levels: number): Record<string, unknown> {
  let v: Record<string, unknown> = { k: 1 };
  for (let i = 1; i < levels; i++) v = { k: v };
  return v;
}

function order(payload: Record<string, unknown>) {
  return { event_type: 'order', event_name: 'Order Completed', identity: 'buyer@example.com', payload };
}

describe('POST /tenant/ingest/batch', () => {
  it('stores every event and answers their ids in request order', async () => {
    const events = Array.from({ length: 25 }, (_, i) => track({ event_name: `e${i}` }));
    const res = await svc.call('POST', '/tenant/ingest/batch', { key: ingestKey, body: events });
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ status: 'enqueued', count: 25 });
    expect(res.body.batch_id).toMatch(/^bat_/);
    expect(res.body.event_ids).toHaveLength(25);
    const rows = await stored(res.body.event_ids);
    const byId = new Map(rows.map((r) => [r.id, r]));
    expect(res.body.event_ids.map((id: string) => byId.get(id)?.event_name)).toEqual(
      events.map((e) => e.event_name),
    );
    expect(res.headers['ratelimit-limit']).toBe('10000');
  });

  it('refuses more than 1000 events with 413 BATCH_TOO_LARGE and stores none', async () => {
    const before = await countEvents();
    const events = Array.from({ length: 1001 }, () => track());
    const res = await svc.call('POST', '/tenant/ingest/batch', { key: ingestKey, body: events });
    expect(res.status).toBe(413);
    expect(res.body.error_code).toBe('BATCH_TOO_LARGE');
    expect(await countEvents()).toBe(before);
  });

  it('refuses an empty batch and a body that is not an array', async () => {
    for (const body of [[], { events: [] }]) {
      const res = await svc.call('POST', '/tenant/ingest/batch', { key: ingestKey, body });
      expect(res.status).toBe(400);
      expect(res.body.error_code).toBe('VALIDATION_ERROR');
    }
  });

  it('refuses a batch with bad items as a whole, naming each bad item in item order', async () => {
    const before = await countEvents();
    const events = [
      track(),
      track({ event_type: 'click' }),
      track(),
      { event_type: 'track', event_name: 'no ids' },
      order({ order_id: 'o' }),
      track(),
    ];
    for (let i = 0; i < 6; i++) events.push(track());
    events[11] = track({ timestamp: 'soon' });
    const res = await svc.call('POST', '/tenant/ingest/batch', { key: ingestKey, body: events });
    expect(res.status).toBe(400);
    expect(res.body.error_code).toBe('VALIDATION_ERROR');
    expect(res.body.details.map((d: { path: string }) => d.path)).toEqual([
      '/1/event_type',
      '/3/identity',
      '/4/payload/total',
      '/11/timestamp',
    ]);
    expect(await countEvents()).toBe(before);
  });

  it('stores a batch of several MiB, parsed, validated and serialized in slices, exactly as sent', async () => {
    const events = Array.from({ length: 300 }, (_, i) =>
      track({
        event_name: `big ${i}`,
        payload: { i, text: `${i} ${'é'.repeat(4000)} ☕`, list: [i, { n: -(i + 1) }] },
      }),
    );
    const body = JSON.stringify(events);
    // Over the sliced-parsing threshold in bytes, over the one-go serialization bound in characters.
    expect(Buffer.byteLength(body)).toBeGreaterThan(2 * 1024 * 1024);
    expect(body.length).toBeGreaterThan(1024 * 1024);
    const res = await svc.call('POST', '/tenant/ingest/batch', { key: ingestKey, rawBody: body });
    expect(res.status, res.text.slice(0, 300)).toBe(202);
    const rows = await stored(res.body.event_ids);
    const byId = new Map(rows.map((r) => [r.id, r]));
    expect(res.body.event_ids.map((id: string) => byId.get(id)?.payload)).toEqual(
      events.map((e) => e.payload),
    );
  });

  it('charges the batch tier per event and answers 429 with Retry-After when it is spent', async () => {
    const other = await svc.newWorkspace('limited');
    await patchSettings(svc.rt.deps.db, svc.rt.deps.settings, other.id, {
      rate_limits: { batch_events_per_minute: 5 },
    });
    const first = await svc.call('POST', '/tenant/ingest/batch', {
      key: other.adminKey,
      body: [track(), track(), track()],
    });
    expect(first.status).toBe(202);
    expect(first.headers['ratelimit-limit']).toBe('5');
    expect(first.headers['ratelimit-remaining']).toBe('2');
    const second = await svc.call('POST', '/tenant/ingest/batch', {
      key: other.adminKey,
      body: [track(), track(), track()],
    });
    expect(second.status).toBe(429);
    expect(second.body.error_code).toBe('RATE_LIMITED');
    expect(Number(second.headers['retry-after'])).toBeGreaterThan(0);
    expect(await countEvents('workspace_id = $1', [other.id])).toBe(3);
  });
});

describe('batch validation, item by item', () => {
  type Check = ((data: unknown) => boolean) & { errors?: FastifySchemaValidationError[] | null };
  const compile = (schema: object) =>
    svc.app.validatorCompiler!({
      schema,
      method: 'POST',
      url: '/tenant/ingest/batch',
      httpPart: 'body',
    }) as Check;
  const noWait = async () => {};

  /** How the batch route validated before: the whole array at once, then checkBatch, sorted by item. */
  const wholeArray = (body: unknown[], now: number) => {
    const check = compile(IngestBatchSchema);
    const schemaErrors = check(body) ? [] : (check.errors ?? []);
    const refused = new Set(schemaErrors.map((e) => e.instancePath));
    const extra = checkBatch(body, now).filter((e) => !refused.has(e.instancePath));
    const itemIndex = (path: string) => Number(/^\/(\d+)/.exec(path)?.[1] ?? -1);
    return [...schemaErrors, ...(extra as unknown as FastifySchemaValidationError[])].sort(
      (a, b) => itemIndex(a.instancePath) - itemIndex(b.instancePath),
    );
  };
  const shape = (errors: FastifySchemaValidationError[]) =>
    errors.map(({ instancePath, keyword, message, params }) => ({ instancePath, keyword, message, params }));

  it('reports exactly what validating the whole array at once reported (property)', async () => {
    const text = fc.oneof(fc.string({ maxLength: 5 }), fc.constant(''), fc.constant('x'.repeat(201)));
    const event = fc.record(
      {
        event_type: fc.oneof(fc.constantFrom('track', 'page', 'identify', 'order', 'click'), fc.integer()),
        event_name: text,
        anonymous_id: fc.oneof(fc.uuid(), text),
        identity: fc.oneof(text, fc.constant('  ')),
        payload: fc.oneof(
          fc.dictionary(fc.string({ maxLength: 3 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 4 }),
          fc.record(
            {
              order_id: fc.oneof(text, fc.integer()),
              total: fc.oneof(fc.double(), fc.constant(-1), fc.constant(12.5)),
              currency: fc.constantFrom('usd', 'EURO', 3),
              status: fc.constantFrom('completed', 'lost'),
              items: fc.oneof(
                fc.array(fc.record({ product_id: text, price: fc.double(), quantity: fc.integer() }), {
                  maxLength: 3,
                }),
                fc.constant('none'),
              ),
            },
            { requiredKeys: [] },
          ),
          fc.constant(JSON.parse(`{"a":${'{"b":'.repeat(12)}1${'}'.repeat(12)}}`)),
          fc.constant([1]),
        ),
        timestamp: fc.oneof(
          fc.constantFrom('2024-05-01T12:00:00Z', '1969-12-31T23:59:59Z', '2999-01-01T00:00:00Z', 'soon', ''),
          fc.integer(),
        ),
        message_id: text,
        extra: fc.jsonValue({ maxDepth: 1 }),
      },
      { requiredKeys: [] },
    );
    const item = fc.oneof({ weight: 5, arbitrary: event }, fc.jsonValue({ maxDepth: 2 }));
    const now = Date.now();
    await fc.assert(
      fc.asyncProperty(fc.array(item, { minLength: 1, maxLength: 12 }), async (body) => {
        const before = wholeArray(body, now);
        const after = await checkBatchItems(body, compile(IngestBatchSchema.items), now, noWait);
        expect(shape(after)).toEqual(shape(before));
        expect(validationDetails(after)).toEqual(validationDetails(before));
      }),
      { seed: 12, numRuns: 500 },
    );
  });

  it('gives the clock a look after every item', async () => {
    let looks = 0;
    const body = Array.from({ length: 30 }, () => track());
    const errors = await checkBatchItems(body, compile(IngestBatchSchema.items), Date.now(), async () => {
      looks++;
    });
    expect(errors).toEqual([]);
    expect(looks).toBe(30);
  });
});

describe('message_id de-duplication', () => {
  it('stores a re-sent event once and answers the original event_id', async () => {
    const body = track({ message_id: `m-${randomUUID()}` });
    const a = await svc.call('POST', '/api/ingest', { key: ingestKey, body });
    const b = await svc.call('POST', '/api/ingest', {
      key: ingestKey,
      body: { ...body, event_name: 'changed' },
    });
    expect(b.status).toBe(202);
    expect(b.body.event_id).toBe(a.body.event_id);
    expect(await countEvents('message_id = $1', [body.message_id])).toBe(1);
    const [row] = await stored([a.body.event_id]);
    expect(row!.event_name).toBe('Product Viewed');
  });

  it('de-duplicates inside one batch and against earlier events', async () => {
    const seen = track({ message_id: `m-${randomUUID()}` });
    const first = await svc.call('POST', '/api/ingest', { key: ingestKey, body: seen });
    const dup = track({ message_id: `m-${randomUUID()}` });
    const res = await svc.call('POST', '/tenant/ingest/batch', {
      key: ingestKey,
      body: [dup, track(), seen, { ...dup, event_name: 'again' }],
    });
    expect(res.status).toBe(202);
    const [d0, , s, d1] = res.body.event_ids;
    expect(s).toBe(first.body.event_id);
    expect(d1).toBe(d0);
    expect(new Set(res.body.event_ids).size).toBe(3);
    expect(await countEvents('message_id = $1', [dup.message_id])).toBe(1);
  });

  it('stores one event when the same message_id arrives concurrently', async () => {
    const messageId = `m-${randomUUID()}`;
    const replies = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        i % 3 === 0
          ? svc.call('POST', '/tenant/ingest/batch', {
              key: ingestKey,
              body: [track({ message_id: messageId }), track()],
            })
          : svc.call('POST', '/api/ingest', { key: ingestKey, body: track({ message_id: messageId }) }),
      ),
    );
    const ids = replies.map((r) => (r.body.event_ids ? r.body.event_ids[0] : r.body.event_id));
    expect(replies.every((r) => r.status === 202)).toBe(true);
    expect(new Set(ids).size).toBe(1);
    expect(await countEvents('message_id = $1', [messageId])).toBe(1);
    expect(await countEvents('id = $1', [ids[0]])).toBe(1);
  });

  it('keeps message_ids of different workspaces apart', async () => {
    const other = await svc.newWorkspace('dedupe-other');
    const body = track({ message_id: `m-${randomUUID()}` });
    const a = await svc.call('POST', '/api/ingest', { key: ingestKey, body });
    const b = await svc.call('POST', '/api/ingest', { key: other.adminKey, body });
    expect(a.body.event_id).not.toBe(b.body.event_id);
    expect(await countEvents('message_id = $1', [body.message_id])).toBe(2);
  });
});

describe('the event writer', () => {
  const row = (workspaceId: string): NewEventRow => ({
    id: `evt_test${randomUUID().replace(/-/g, '').slice(0, 22)}`,
    workspace_id: workspaceId,
    message_id: null,
    event_type: 'track',
    event_name: 'direct',
    anonymous_id: randomUUID(),
    identity: null,
    payload: {},
    occurred_at: new Date().toISOString(),
    received_at: new Date().toISOString(),
    api_key_id: 'key_test',
  });

  it('shares commits between concurrent requests', async () => {
    const writer = createEventWriter(svc.rt.deps.db, svc.rt.deps.log);
    const rows = Array.from({ length: 200 }, () => row(svc.ws.id));
    const ids = await Promise.all(rows.map((r) => writer.write([r])));
    expect(ids.flat()).toEqual(rows.map((r) => r.id));
    expect(writer.stats().flushes).toBeLessThan(50);
    expect(await countEvents('id = ANY($1::text[])', [rows.map((r) => r.id)])).toBe(200);
    await writer.close();
  });

  it('fails only the request whose rows the database refuses, not the others of its commit', async () => {
    const writer = createEventWriter(svc.rt.deps.db, svc.rt.deps.log, { maxInFlight: 1 });
    const first = writer.write([row(svc.ws.id)]);
    const bad = writer.write([row(randomUUID())]); // no such workspace: foreign key violation
    const good = writer.write([row(svc.ws.id)]);
    await first;
    await expect(bad).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    const [id] = await good;
    expect(await countEvents('id = $1', [id])).toBe(1);
    expect(writer.stats().flushes).toBe(2);
    await writer.close();
  });

  it('answers 503 UNAVAILABLE with Retry-After, never a 202, when the commit fails', async () => {
    const broken = {
      ...svc.rt.deps.db,
      query: async () => {
        throw Object.assign(new Error('connection terminated'), { code: '57P01' });
      },
    };
    const writer = createEventWriter(broken, svc.rt.deps.log);
    const err = await writer.write([row(svc.ws.id)]).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'UNAVAILABLE', status: 503, headers: { 'retry-after': '1' } });
    await writer.close();
  });

  it('refuses writes after close with 503, after committing what it had accepted', async () => {
    const writer = createEventWriter(svc.rt.deps.db, svc.rt.deps.log);
    const accepted = [
      writer.write([row(svc.ws.id)]),
      writer.write([row(svc.ws.id)]),
      writer.write([row(svc.ws.id)]),
    ];
    await writer.close();
    const ids = (await Promise.all(accepted)).flat();
    expect(await countEvents('id = ANY($1::text[])', [ids])).toBe(3);
    await expect(writer.write([row(svc.ws.id)])).rejects.toMatchObject({ code: 'UNAVAILABLE' });
  });
});

describe('shutdown', () => {
  it('commits every accepted write before the database closes', async () => {
    const own = await startTestService();
    const rows = Array.from({ length: 50 }, () => ({
      id: newSortableId('evt'),
      workspace_id: own.ws.id,
      message_id: null,
      event_type: 'track',
      event_name: 'late',
      anonymous_id: randomUUID(),
      identity: null,
      payload: {},
      occurred_at: new Date().toISOString(),
      received_at: new Date().toISOString(),
      api_key_id: 'key_test',
    }));
    const writes = rows.map((r) => own.rt.deps.events.write([r]));
    await own.close();
    const results = await Promise.allSettled(writes);
    expect(results.every((r) => r.status === 'fulfilled')).toBe(true);
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value[0] : null))).toEqual(rows.map((r) => r.id));
  });
});
