import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../../../test/expect-error';
import { startTestService, type TestService } from '../../../test/harness';
import { waitUntil } from '../../../test/wait';
import { notify } from '../../platform/db';
import { ERASURE_CHANNEL } from '../../platform/personal-data';
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

/** SSE events in what a client received. */
const eventsIn = (chunks: string[]) => chunks.join('').split('event: event\n').length - 1;

/**
 * A client whose socket accepts the first write and then nothing until `drain()`: the hub sees a
 * response whose write answers false, as Node's does for a peer that stopped reading.
 */
function stalledClient() {
  const written: string[] = [];
  let ended = false;
  const res = Object.assign(new EventEmitter(), {
    destroyed: false,
    writableLength: 0,
    accepting: true,
    write(chunk: string) {
      written.push(chunk);
      const took = res.accepting;
      res.accepting = false;
      return took;
    },
    end() {
      ended = true;
    },
    destroy() {
      res.destroyed = true;
    },
  });
  return {
    res: res as unknown as ServerResponse,
    written,
    ended: () => ended,
    drain() {
      res.accepting = true;
      // A reading client keeps taking: every write is accepted from now on.
      res.write = (chunk: string) => {
        written.push(chunk);
        return true;
      };
      res.emit('drain');
    },
  };
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

  it('holds at most its byte bound for a client that stopped reading, then ends the stream and says why', async () => {
    const ws = await svc.newWorkspace('live-slow');
    const hub = createEventStreamHub(svc.rt.deps.db, svc.rt.deps.log);
    const client = stalledClient();
    hub.open(ws.id, { types: new Set(), name: null }, client.res, async () => true);
    try {
      await waitUntil(() => hub.stats().cursor !== null, { what: 'the first read of the log' });
      // One event first: its write is accepted by nobody (the socket is full from then on).
      await svc.call('POST', '/api/ingest', { key: ws.adminKey, body: track('First', 0) });
      await waitUntil(() => eventsIn(client.written) === 1, { what: 'the first event to be written' });
      // Then 1.5 times the byte bound in events of ≈ 10 KB, while the client reads nothing.
      const blob = 'x'.repeat(10_000);
      const n = Math.ceil((STREAM_LIMITS.bufferBytes * 1.5) / blob.length);
      const events = Array.from({ length: n }, (_, i) => ({ ...track('Flood', i), payload: { blob, i } }));
      for (let i = 0; i < n; i += 100) {
        const sent = await svc.call('POST', '/tenant/ingest/batch', {
          key: ws.adminKey,
          body: events.slice(i, i + 100),
        });
        expect(sent.status).toBe(202);
      }
      await waitUntil(() => hub.stats().endedSlow === 1, { what: 'the stream to be ended' });
      expect(hub.stats().streams).toBe(0);
      expect(client.ended()).toBe(true);
      // None of the flood reached the socket; what waited for it is counted, within the bound.
      expect(eventsIn(client.written)).toBe(1);
      const last = client.written.at(-1)!;
      const dropped = JSON.parse(/event: dropped\ndata: (.*)\n/.exec(last)![1]!);
      const messageBytes = Buffer.byteLength(client.written[0]!) + blob.length;
      expect(dropped.count).toBeGreaterThan(Math.floor(STREAM_LIMITS.bufferBytes / messageBytes) - 2);
      expect(dropped.count).toBeLessThanOrEqual(Math.floor(STREAM_LIMITS.bufferBytes / blob.length) + 1);
      expect(JSON.parse(/event: end\ndata: (.*)\n/.exec(last)![1]!).reason).toMatch(/read too slowly/);
      // The client reads again: nothing more comes.
      client.drain();
      expect(eventsIn(client.written)).toBe(1);
    } finally {
      hub.close();
    }
  });

  it('drops what its streams still buffer for a workspace when an erasure there is notified, and says how many', async () => {
    const ws = await svc.newWorkspace('live-erased');
    const other = await svc.newWorkspace('live-neighbour');
    const hub = createEventStreamHub(svc.rt.deps.db, svc.rt.deps.log);
    const erased = stalledClient();
    const neighbour = stalledClient();
    hub.open(ws.id, { types: new Set(), name: null }, erased.res, async () => true);
    hub.open(other.id, { types: new Set(), name: null }, neighbour.res, async () => true);
    try {
      await waitUntil(() => hub.stats().cursor !== null, { what: 'the first read of the log' });
      for (const [w, c] of [
        [ws, erased],
        [other, neighbour],
      ] as const) {
        await svc.call('POST', '/api/ingest', { key: w.adminKey, body: track('First', 0) });
        await waitUntil(() => eventsIn(c.written) === 1, { what: 'the first event to be written' });
      }
      // Five events of each workspace wait for their stalled clients.
      for (const w of [ws, other]) {
        const batch = Array.from({ length: 5 }, (_, i) => track('Buffered', i + 1));
        expect(
          (await svc.call('POST', '/tenant/ingest/batch', { key: w.adminKey, body: batch })).status,
        ).toBe(202);
      }
      const { rows } = await svc.rt.deps.db.query<{ seq: string }>(
        'SELECT max(seq)::text AS seq FROM events',
      );
      await waitUntil(() => BigInt(hub.stats().cursor ?? 0) >= BigInt(rows[0]!.seq), {
        what: 'the events to be read',
      });

      // What the erasure workflow sends at its commit (through the database: PGlite delivers it in
      // this process, PostgreSQL to every listening process).
      await notify(svc.rt.deps.db, ERASURE_CHANNEL, ws.id);
      await waitUntil(() => hub.stats().droppedOnErasure === 5, {
        what: 'the buffered events to be dropped',
      });

      erased.drain();
      neighbour.drain();
      expect(eventsIn(erased.written)).toBe(1);
      expect(erased.written.join('')).not.toContain('Buffered');
      expect(erased.written.filter((w) => w.startsWith('event: dropped'))).toEqual([
        `event: dropped\ndata: ${JSON.stringify({ count: 5 })}\n\n`,
      ]);
      // The other workspace's stream keeps everything.
      expect(eventsIn(neighbour.written)).toBe(6);
      expect(neighbour.written.some((w) => w.startsWith('event: dropped'))).toBe(false);
      expect(hub.stats().streams).toBe(2);
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
