import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../../../test/expect-error';
import { startTestService, type TestService } from '../../../test/harness';
import { waitUntil } from '../../../test/wait';
import { createEventStreamHub } from './event-stream';
import { STREAM_LIMITS } from './stream-limits';

let svc: TestService;
let base: string;
beforeAll(async () => {
  svc = await startTestService();
  base = await svc.app.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(async () => svc?.close());

interface Message {
  event: string;
  // biome-ignore lint/suspicious/noExplicitAny: inspected field by field
  data: any;
}

/** Opens the stream over real HTTP and collects its messages as they arrive. */
async function openStream(query: string, key: string) {
  const abort = new AbortController();
  const res = await fetch(`${base}/tenant/events/stream${query}`, {
    headers: { 'x-api-key': key, accept: 'text/event-stream' },
    signal: abort.signal,
  });
  const messages: Message[] = [];
  let text = '';
  if (res.ok && res.body) {
    void (async () => {
      const decoder = new TextDecoder();
      try {
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
          text += decoder.decode(chunk, { stream: true });
          let end = text.indexOf('\n\n');
          while (end >= 0) {
            const block = text.slice(0, end);
            text = text.slice(end + 2);
            const event = /^event: (.*)$/m.exec(block)?.[1];
            const data = /^data: (.*)$/m.exec(block)?.[1];
            if (event && data) messages.push({ event, data: JSON.parse(data) });
            end = text.indexOf('\n\n');
          }
        }
      } catch {
        // aborted
      }
    })();
  }
  return { res, messages, close: () => abort.abort() };
}

const track = (name: string, i: number, type = 'track') => ({
  event_type: type,
  event_name: name,
  identity: `live-${i}@example.com`,
  payload: type === 'order' ? { order_id: `L-${i}`, total: 1 } : { n: i },
});

describe('GET /tenant/events/stream', () => {
  it('sends the workspace’s new events as they arrive, filtered by type and name', async () => {
    const ws = await svc.newWorkspace('live');
    const all = await openStream('', ws.adminKey);
    expect(all.res.status).toBe(200);
    expect(all.res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const named = await openStream('?type=track,page&name=Signed%20Up', await ws.key(['viewer']));
    const orders = await openStream('?type=order', ws.adminKey);
    // The streams start at the end of the log once their first poll has run.
    await waitUntil(
      async () => {
        // Sent until the first stream sees one: its start position is the log's end when it opened.
        await svc.call('POST', '/api/ingest', { key: ws.adminKey, body: track('Ping', 0) });
        return all.messages.some((m) => m.data.event_name === 'Ping');
      },
      { what: 'the stream to carry a first event', intervalMs: 300 },
    );
    const batch = [
      track('Signed Up', 1),
      track('Viewed', 2, 'page'),
      track('Signed Up', 3, 'page'),
      track('Buy', 4, 'order'),
    ];
    expect((await svc.call('POST', '/tenant/ingest/batch', { key: ws.adminKey, body: batch })).status).toBe(
      202,
    );
    // Another workspace's events never reach these streams.
    await svc.call('POST', '/tenant/ingest/batch', { body: [track('Signed Up', 99)] });

    await waitUntil(() => all.messages.filter((m) => m.data.event_name !== 'Ping').length >= 4, {
      what: 'the four events on the unfiltered stream',
    });
    await waitUntil(() => orders.messages.length >= 1 && named.messages.length >= 2, {
      what: 'the filtered streams',
    });
    const seen = all.messages.filter((m) => m.data.event_name !== 'Ping');
    expect(seen.map((m) => m.data.event_name)).toEqual(['Signed Up', 'Viewed', 'Signed Up', 'Buy']);
    expect(seen[0]!.event).toBe('event');
    expect(Object.keys(seen[0]!.data).sort()).toEqual(
      [
        'anonymous_id',
        'event_name',
        'id',
        'identity',
        'occurred_at',
        'payload',
        'received_at',
        'type',
      ].sort(),
    );
    expect(seen[0]!.data).toMatchObject({ type: 'track', identity: 'live-1@example.com', payload: { n: 1 } });
    expect(named.messages.map((m) => m.data.identity)).toEqual(['live-1@example.com', 'live-3@example.com']);
    expect(orders.messages.map((m) => m.data.event_name)).toEqual(['Buy']);
    for (const s of [all, named, orders]) s.close();
  });

  it(`refuses stream ${STREAM_LIMITS.perWorkspace + 1} of a workspace with 429 and Retry-After`, async () => {
    const ws = await svc.newWorkspace('live-cap');
    const open = [];
    for (let i = 0; i < STREAM_LIMITS.perWorkspace; i++) {
      const s = await openStream('', ws.adminKey);
      expect(s.res.status).toBe(200);
      open.push(s);
    }
    const refused = await svc.call('GET', '/tenant/events/stream', {
      key: ws.adminKey,
      headers: { accept: 'text/event-stream' },
    });
    expectError(refused, 429, 'RATE_LIMITED');
    expect(refused.headers['retry-after']).toBe('5');
    // Another workspace is not affected.
    const other = await openStream('', svc.ws.adminKey);
    expect(other.res.status).toBe(200);
    other.close();
    for (const s of open) s.close();
    // Closed streams free their places.
    await waitUntil(
      async () => {
        const again = await openStream('', ws.adminKey);
        again.close();
        return again.res.status === 200;
      },
      { what: 'a place once the streams closed' },
    );
  });

  it('asks for Accept: text/event-stream and refuses unknown event types', async () => {
    expectError(await svc.call('GET', '/tenant/events/stream'), 406, 'NOT_ACCEPTABLE');
    const bad = await svc.call('GET', '/tenant/events/stream?type=track,nope', {
      headers: { accept: 'text/event-stream' },
    });
    expectError(bad, 400, 'VALIDATION_ERROR');
    expect(bad.body.details[0].path).toBe('/type');
  });

  it('keeps a bounded buffer for a slow reader and tells it how many events it missed', async () => {
    const ws = await svc.newWorkspace('live-slow');
    const hub = createEventStreamHub(svc.rt.deps.db, svc.rt.deps.log);
    // A client whose socket accepts the first write and then nothing until it drains.
    const written: string[] = [];
    const res = Object.assign(new EventEmitter(), {
      destroyed: false,
      accepting: true,
      write(chunk: string) {
        written.push(chunk);
        return this.accepting;
      },
      end() {},
    });
    res.accepting = false;
    hub.open(ws.id, { types: new Set(), name: null }, res as unknown as ServerResponse, async () => true);
    try {
      await waitUntil(() => hub.stats().streams === 1, { what: 'the stream to open' });
      await waitUntil(() => hub.stats().cursor !== null, { what: 'the first read of the log' });
      // One event first: its write is accepted by nobody (the socket is full from then on).
      await svc.call('POST', '/api/ingest', { key: ws.adminKey, body: track('First', 0) });
      const eventsIn = (chunks: string[]) => chunks.join('').split('event: event\n').length - 1;
      await waitUntil(() => eventsIn(written) === 1, { what: 'the first event to be written' });
      // Then more than the buffer holds, while the client reads nothing.
      const n = STREAM_LIMITS.buffer + 120;
      const events = Array.from({ length: n }, (_, i) => track('Flood', i));
      for (let i = 0; i < n; i += 500) {
        const sent = await svc.call('POST', '/tenant/ingest/batch', {
          key: ws.adminKey,
          body: events.slice(i, i + 500),
        });
        expect(sent.status).toBe(202);
      }
      const { rows } = await svc.rt.deps.db.query<{ seq: string }>(
        'SELECT max(seq)::text AS seq FROM events',
      );
      await waitUntil(() => BigInt(hub.stats().cursor ?? 0) >= BigInt(rows[0]!.seq), {
        what: 'the flood to be read',
      });
      expect(eventsIn(written)).toBe(1);
      // The client catches up: the buffered 500, then how many it missed.
      res.accepting = true;
      res.emit('drain');
      expect(eventsIn(written)).toBe(1 + STREAM_LIMITS.buffer);
      const dropped = written.filter((w) => w.startsWith('event: dropped'));
      expect(dropped).toHaveLength(1);
      expect(JSON.parse(dropped[0]!.split('data: ')[1]!)).toEqual({ count: n - STREAM_LIMITS.buffer });
    } finally {
      hub.close();
    }
  });

  it('ends a stream at its heartbeat once its session or key is no longer valid', async () => {
    const hub = createEventStreamHub(svc.rt.deps.db, svc.rt.deps.log, { heartbeatMs: 50 });
    const written: string[] = [];
    let ended = false;
    const res = Object.assign(new EventEmitter(), {
      destroyed: false,
      write(chunk: string) {
        written.push(chunk);
        return true;
      },
      end() {
        ended = true;
        res.emit('close');
      },
    });
    let valid = true;
    hub.open(
      svc.ws.id,
      { types: new Set(), name: null },
      res as unknown as ServerResponse,
      async () => valid,
    );
    try {
      await waitUntil(() => written.some((w) => w.startsWith(': heartbeat')), { what: 'a heartbeat' });
      expect(ended).toBe(false);
      valid = false;
      await waitUntil(() => ended, { what: 'the stream to end' });
      expect(written.some((w) => w.startsWith('event: end'))).toBe(true);
      expect(hub.stats().streams).toBe(0);
    } finally {
      hub.close();
    }
  });
});
