import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../../test/expect-error';
import { startTestService, type TestService, type TestWorkspace } from '../../test/harness';
import { letTimePass, waitUntil } from '../../test/wait';
import { appendEvents } from '../modules/ingest';
import { insertTestEvents, waitProcessed } from '../modules/processing/processing.test-kit';
import { waitSegmentsSettled } from '../modules/segments/segments.test-kit';
import { analyticsSlots } from '../platform/http/analytics-share';
import { createRecordSplitter, firstField, parseCsvRecord } from '../transfer-records';
import { exportColumns } from './exports';

let svc: TestService;
let ws: TestWorkspace;
let base: string;
/** The events of `ws` in the order they were appended, with their ids. */
const appended: string[] = [];

/** 1,200 events: several pages on either engine (the first page is 50 rows, each next at most twice the last). */
const PEOPLE = 40;
const EVENTS = 1_200;

beforeAll(async () => {
  svc = await startTestService();
  ws = await svc.newWorkspace('exports');
  await svc.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(svc.app.server.address() as AddressInfo).port}`;
  const db = svc.rt.deps.db;
  for (let from = 0; from < EVENTS; from += 300) {
    const events = Array.from({ length: 300 }, (_, k) => {
      const i = from + k;
      const person = i % PEOPLE;
      if (i < PEOPLE)
        return {
          identity: `p${person}@example.com`,
          event_type: 'identify' as const,
          event_name: 'Signed up',
          payload: { first_name: `P${person}`, plan: i % 2 ? 'pro' : 'free', note: 'a, "quoted"\nline' },
          message_id: `m-${i}`,
        };
      if (i % 10 === 0)
        return {
          identity: `p${person}@example.com`,
          event_type: 'order' as const,
          event_name: 'Order Completed',
          payload: { order_id: `o-${i}`, total: 10 + person },
          at: new Date(Date.UTC(2025, 0, 1) + i * 60_000).toISOString(),
        };
      return {
        identity: `p${person}@example.com`,
        event_type: 'track' as const,
        event_name: i % 3 ? 'Viewed, twice' : 'Viewed',
        payload: { n: i, tags: ['a', 'b'] },
      };
    });
    appended.push(...(await insertTestEvents(db, ws.id, events)));
  }
  await waitProcessed(db);
}, 120_000);
afterAll(async () => svc?.close());

interface Got {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** The answer ended with the chunked encoding's terminating chunk. */
  complete: boolean;
}

/** A GET over a real socket, read to its end (or to its abrupt end). */
function get(path: string, key = ws.adminKey): Promise<Got> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { headers: { 'x-api-key': key } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        text += d;
      });
      res.on('error', () => {});
      res.on('close', () =>
        resolve({ status: res.statusCode!, headers: res.headers, text, complete: res.complete }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

const lines = (text: string) => createRecordSplitter('ndjson').push(text);
const records = (text: string) => lines(text).map((l) => JSON.parse(l) as Record<string, unknown>);

describe('GET /tenant/exports/events', () => {
  it('streams every event of the workspace as NDJSON, in the order received, each as stored', async () => {
    const res = await get('/tenant/exports/events');
    expect(res.status).toBe(200);
    expect(res.complete).toBe(true);
    expect(res.headers['content-type']).toBe('application/x-ndjson; charset=utf-8');
    expect(res.headers['content-disposition']).toMatch(
      /^attachment; filename="events-\d{8}T\d{6}Z\.ndjson"$/,
    );
    const got = records(res.text);
    expect(got.map((r) => r.id)).toEqual(appended);
    expect(Object.keys(got[0]!)).toEqual(exportColumns('events'));
    expect(got[0]).toMatchObject({
      message_id: 'm-0',
      event_type: 'identify',
      identity: 'p0@example.com',
      anonymous_id: null,
      payload: { first_name: 'P0', plan: 'free', note: 'a, "quoted"\nline' },
    });
    expect(got[0]!.profile_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(got[50]!.timestamp).toBe('2025-01-01T00:50:00.000Z');
    for (const r of got) expect(r.received_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it('shows each event as the profile timeline does, plus its message id and profile', async () => {
    const [exported] = records((await get('/tenant/exports/events')).text);
    const timeline = await svc.call('GET', `/tenant/profiles/${exported!.profile_id}/events?limit=500`, {
      key: ws.adminKey,
    });
    const shown = timeline.body.data.find((e: { id: string }) => e.id === exported!.id);
    const { message_id: _m, profile_id: _p, ...rest } = exported!;
    expect(rest).toEqual(shown);
  });

  it('writes CSV with a header, one column per field, nested values as JSON, quoted as RFC 4180 says', async () => {
    const res = await get('/tenant/exports/events?format=csv');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8; header=present');
    expect(res.headers['content-disposition']).toMatch(/\.csv"$/);
    const csv = createRecordSplitter('csv').push(res.text);
    expect(csv[0]).toBe(`${exportColumns('events').join(',')}\r\n`);
    expect(csv).toHaveLength(EVENTS + 1);
    for (const r of csv) expect(r.endsWith('\r\n')).toBe(true);
    const json = records((await get('/tenant/exports/events')).text);
    const columns = exportColumns('events');
    csv.slice(1).forEach((record, i) => {
      const fields = parseCsvRecord(record);
      const want = json[i]!;
      expect(fields).toHaveLength(columns.length);
      columns.forEach((c, k) => {
        const v = want[c];
        if (v === null) expect(fields[k]).toBe('');
        else if (typeof v === 'object') expect(JSON.parse(fields[k]!)).toEqual(v);
        else expect(fields[k]).toBe(String(v));
      });
    });
    // A field with a comma is quoted, one without is not; NULL is an empty field.
    expect(csv[1]).toMatch(/^evt_\w+,m-0,identify,Signed up,,p0@example\.com,"\{""/);
    expect(csv[1]).toContain('""note"": ""a, \\""quoted\\""\\nline""');
    expect(csv.some((r) => r.includes(',"Viewed, twice",'))).toBe(true);
  });

  it('filters on when events were received, `since` included and `until` excluded', async () => {
    const db = svc.rt.deps.db;
    const other = await svc.newWorkspace('windows');
    const at = (d: number) => new Date(Date.UTC(2024, 5, d)).toISOString();
    for (const d of [1, 2, 3, 4])
      await appendEvents(
        db,
        [{ identity: `w${d}@example.com`, event_type: 'track', event_name: `day ${d}` }],
        {
          workspaceId: other.id,
          receivedAt: at(d),
        },
      );
    const names = async (q: string) =>
      records((await get(`/tenant/exports/events${q}`, other.adminKey)).text).map((r) => r.event_name);
    expect(await names(`?since=${at(2)}&until=${at(4)}`)).toEqual(['day 2', 'day 3']);
    expect(await names(`?since=${at(3)}`)).toEqual(['day 3', 'day 4']);
    expect(await names(`?until=${at(2)}`)).toEqual(['day 1']);
    expectError(
      await svc.call('GET', `/tenant/exports/events?since=${at(3)}&until=${at(3)}`, { key: other.adminKey }),
      400,
      'VALIDATION_ERROR',
    );
    expectError(await svc.call('GET', '/tenant/exports/events?since=yesterday'), 400, 'VALIDATION_ERROR');
    expectError(await svc.call('GET', '/tenant/exports/events?format=xml'), 400, 'VALIDATION_ERROR');
  });
});

describe('resuming an export with `after`', () => {
  it('continues right after the record named, with no duplicate and no gap, in either format', async () => {
    for (const k of [0, 99, 100, 499, 777, EVENTS - 2]) {
      const rest = records((await get(`/tenant/exports/events?after=${appended[k]}`)).text);
      expect(rest.map((r) => r.id)).toEqual(appended.slice(k + 1));
    }
    const csv = createRecordSplitter('csv').push(
      (await get(`/tenant/exports/events?format=csv&after=${appended[10]}`)).text,
    );
    expect(csv.slice(1).map((r) => firstField(r, 'csv'))).toEqual(appended.slice(11));
    expect((await get(`/tenant/exports/events?after=${appended[EVENTS - 1]}`)).text).toBe('');
  });

  it('finds an event whose receipt time is not the time in its id', async () => {
    const db = svc.rt.deps.db;
    const other = await svc.newWorkspace('backdated');
    const { ids } = await appendEvents(
      db,
      Array.from({ length: 5 }, (_, i) => ({
        identity: `b${i}@example.com`,
        event_type: 'track' as const,
        event_name: 'x',
      })),
      { workspaceId: other.id, receivedAt: '2020-01-01T00:00:00Z' },
    );
    const rest = records((await get(`/tenant/exports/events?after=${ids[1]}`, other.adminKey)).text);
    expect(rest.map((r) => r.id)).toEqual(ids.slice(2));
  });

  it('answers 404 for an id this workspace does not hold (another workspace’s, unknown) and 400 for a malformed one', async () => {
    const other = await svc.newWorkspace('foreign');
    const [foreign] = await insertTestEvents(svc.rt.deps.db, other.id, [
      { identity: 'f@example.com', event_type: 'track', event_name: 'x' },
    ]);
    for (const id of [foreign!, `evt_${'0'.repeat(26)}`]) {
      const res = await svc.call('GET', `/tenant/exports/events?after=${id}`, { key: ws.adminKey });
      expectError(res, 404, 'NOT_FOUND');
      expect(res.body.details[0].path).toBe('/after');
      expect(res.text).not.toContain('f@example.com');
    }
    for (const [kind, id] of [
      ['events', 'nope'],
      ['events', '00000000-0000-4000-8000-000000000001'],
      ['profiles', 'evt_x'],
    ]) {
      const res = await svc.call('GET', `/tenant/exports/${kind}?after=${id}`, { key: ws.adminKey });
      expectError(res, 400, 'VALIDATION_ERROR');
      expect(res.body.details[0].path).toBe('/after');
    }
  });

  it('resumes after a connection cut mid-stream over a real socket, the pieces adding up to the whole', async () => {
    const whole = lines((await get('/tenant/exports/events')).text);
    // Read a few records, then cut the connection while the server still has pages to send.
    const firstPart = await new Promise<string[]>((resolve, reject) => {
      const split = createRecordSplitter('ndjson');
      const got: string[] = [];
      const req = request(
        `${base}/tenant/exports/events`,
        { headers: { 'x-api-key': ws.adminKey } },
        (res) => {
          res.setEncoding('utf8');
          res.on('data', (d: string) => {
            got.push(...split.push(d));
            if (got.length >= 150) {
              req.destroy();
              resolve(got);
            }
          });
        },
      );
      req.on('error', (err) => {
        if (got.length < 150) reject(err);
      });
      req.end();
    });
    const last = firstField(firstPart[firstPart.length - 1]!, 'ndjson');
    const rest = lines((await get(`/tenant/exports/events?after=${last}`)).text);
    expect([...firstPart, ...rest]).toEqual(whole);
    // The export whose client left stopped and gave its slot back.
    await waitUntil(() => analyticsSlots.held(ws.id) === 0, { what: 'the cut export to release its slot' });
  });
});

describe('GET /tenant/exports/profiles, /orders and /segments/{id}/members', () => {
  it('exports each live profile as GET /tenant/profiles/{id} shows it, identities included', async () => {
    const got = records((await get('/tenant/exports/profiles')).text);
    expect(got).toHaveLength(PEOPLE);
    expect(Object.keys(got[0]!)).toEqual(exportColumns('profiles'));
    for (const r of got) {
      const read = await svc.call('GET', `/tenant/profiles/${r.id}`, { key: ws.adminKey });
      // The single read adds the profile's consent; a workspace export carries the profile's fields.
      const { consent: _, ...fields } = read.body.data;
      expect(r).toEqual(fields);
    }
    const csv = createRecordSplitter('csv').push((await get('/tenant/exports/profiles?format=csv')).text);
    expect(csv.slice(1).map((r) => firstField(r, 'csv'))).toEqual(got.map((r) => r.id));
    const after = records((await get(`/tenant/exports/profiles?after=${got[9]!.id}`)).text);
    expect(after.map((r) => r.id)).toEqual(got.slice(10).map((r) => r.id));
  });

  it('exports the orders as GET /tenant/orders shows them, in the order they happened', async () => {
    const got = records((await get('/tenant/exports/orders')).text);
    const listed = await svc.call('GET', '/tenant/orders?limit=500', { key: ws.adminKey });
    expect(got).toEqual([...listed.body.data].reverse());
    expect(got.length).toBeGreaterThan(100);
    const after = records((await get(`/tenant/exports/orders?after=${got[50]!.order_id}`)).text);
    expect(after).toEqual(got.slice(51));
    const window = records(
      (await get('/tenant/exports/orders?since=2025-01-01T05:00:00Z&until=2025-01-01T10:00:00Z')).text,
    );
    expect(window.map((o) => o.occurred_at)).toEqual(
      got
        .map((o) => o.occurred_at as string)
        .filter((t) => t >= '2025-01-01T05:00' && t < '2025-01-01T10:00'),
    );
    expectError(
      await svc.call('GET', '/tenant/exports/orders?after=o-nope', { key: ws.adminKey }),
      404,
      'NOT_FOUND',
    );
  });

  it('exports a segment’s members as the member listing shows them', async () => {
    const made = await svc.call('POST', '/tenant/segments', {
      key: ws.adminKey,
      body: { name: 'pro', query: { attribute: 'plan', op: 'eq', value: 'pro' } },
    });
    const id = made.body.data.id as string;
    await waitSegmentsSettled(svc.rt.deps.db);
    const listed = await svc.call('GET', `/tenant/segments/${id}/members?limit=500`, { key: ws.adminKey });
    const got = records((await get(`/tenant/exports/segments/${id}/members`)).text);
    expect(got).toEqual(listed.body.data);
    expect(got.length).toBe(PEOPLE / 2);
    const after = records((await get(`/tenant/exports/segments/${id}/members?after=${got[3]!.id}`)).text);
    expect(after).toEqual(got.slice(4));
    expect(
      records((await get(`/tenant/exports/segments/${id}/members?until=2000-01-01T00:00:00Z`)).text),
    ).toEqual([]);
    expectError(
      await svc.call(
        'GET',
        `/tenant/exports/segments/${id}/members?after=00000000-0000-4000-8000-000000000001`,
        {
          key: ws.adminKey,
        },
      ),
      404,
      'NOT_FOUND',
    );
  });
});

describe('what an export may hold', () => {
  it('answers HEAD with the headers of the export and reads none of it', async () => {
    const res = await svc.call('HEAD', '/tenant/exports/events?format=csv', { key: ws.adminKey });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8; header=present');
    expect(res.text).toBe('');
    expect(analyticsSlots.held(ws.id)).toBe(0);
  });

  it('answers 429 with Retry-After while the workspace’s analytics share is taken, and serves again after', async () => {
    const held = [analyticsSlots.tryAcquire(ws.id, 2), analyticsSlots.tryAcquire(ws.id, 2)];
    try {
      const res = await svc.call('GET', '/tenant/exports/events', { key: ws.adminKey });
      expectError(res, 429, 'RATE_LIMITED');
      expect(res.headers['retry-after']).toBe('5');
    } finally {
      for (const release of held) release?.();
    }
    expect((await get('/tenant/exports/profiles')).status).toBe(200);
  });

  it('holds a slot while its client is slow, and gives it back when the client leaves', async () => {
    // ≈ 10 MB of events: more than the sockets' buffers hold, so a client that reads nothing stalls
    // the export on the socket's drain, holding its slot.
    const big = await svc.newWorkspace('big');
    const blob = 'x'.repeat(25_000);
    for (let i = 0; i < 4; i++)
      await appendEvents(
        svc.rt.deps.db,
        Array.from({ length: 100 }, (_, k) => ({
          identity: `big${k}@example.com`,
          event_type: 'track' as const,
          event_name: 'big',
          payload: { blob },
        })),
        { workspaceId: big.id },
      );
    const req = request(`${base}/tenant/exports/events`, { headers: { 'x-api-key': big.adminKey } }, (res) =>
      res.pause(),
    );
    req.on('error', () => {});
    req.end();
    await waitUntil(() => analyticsSlots.held(big.id) === 1, { what: 'the export to take its slot' });
    // Still held a moment later: the export waits for the reader, it has not finished.
    await letTimePass(300, 'a stalled reader keeps the export waiting');
    expect(analyticsSlots.held(big.id)).toBe(1);
    req.destroy();
    await waitUntil(() => analyticsSlots.held(big.id) === 0, {
      what: 'the export to stop and release its slot',
    });
  });
});
