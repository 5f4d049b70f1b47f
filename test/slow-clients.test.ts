import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../src/config';
import { STREAM_LIMITS } from '../src/modules/console/stream-limits';
import { createLogger } from '../src/platform/logger';
import { createRuntime, type Runtime } from '../src/runtime';
import { killAllChildren, request, type ServiceProcess, serviceEnv, startService } from './child';
import { dropSchema, ENGINE } from './harness';
import { letTimePass, waitUntil } from './wait';

// Each test spawns whole services (seconds each on a busy 2-core machine): allow for it.
vi.setConfig({ testTimeout: 180_000, hookTimeout: 180_000 });

/**
 * Slow clients, over real sockets against a real `cdp start`: a request body trickling in is cut
 * off with 408 in the envelope, many of them do not stop the service serving others, one still
 * attached at SIGTERM neither keeps the process alive nor costs an acknowledged event, and live
 * event streams whose clients stopped reading hold a bounded number of bytes, then end.
 */
const schemas: string[] = [];
const dirs: string[] = [];
const services: ServiceProcess[] = [];
const runtimes: Runtime[] = [];

async function start(extra: Record<string, string> = {}) {
  const env = serviceEnv(extra);
  if (env.DATABASE_SCHEMA) schemas.push(env.DATABASE_SCHEMA);
  const svc = await startService(env);
  services.push(svc);
  return { svc, env, port: Number(new URL(svc.url!).port) };
}

afterAll(async () => {
  await Promise.all(services.map((s) => s.stop()));
  killAllChildren();
  for (const rt of runtimes) await rt.stop().catch(() => {});
  for (const s of schemas) await dropSchema(process.env.DATABASE_URL!, s);
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

interface SlowClient {
  /** Everything the server sent, once it closed the connection (or the client gave up). */
  done: Promise<{ text: string; ms: number; closedByServer: boolean }>;
  bytesSent(): number;
}

/**
 * A client that sends the headers of a 30,000-byte JSON body, then one byte every `everyMs`,
 * until the server closes the connection or `giveUpMs` passes.
 */
function slowBody(port: number, key: string, opts: { everyMs?: number; giveUpMs?: number } = {}): SlowClient {
  const everyMs = opts.everyMs ?? 200;
  const giveUpMs = opts.giveUpMs ?? 15_000;
  const t0 = Date.now();
  const socket = net.connect(port, '127.0.0.1');
  let text = '';
  let sent = 0;
  let drip: NodeJS.Timeout | undefined;
  socket.on('data', (d) => {
    text += d.toString();
  });
  socket.on('error', () => {});
  socket.once('connect', () => {
    socket.write(
      `POST /api/ingest HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\nContent-Type: application/json\r\n` +
        'Content-Length: 30000\r\n\r\n{',
    );
    drip = setInterval(() => {
      if (socket.writable) {
        socket.write(' ');
        sent++;
      }
    }, everyMs);
  });
  const done = new Promise<{ text: string; ms: number; closedByServer: boolean }>((resolve) => {
    const giveUp = setTimeout(() => {
      clearInterval(drip);
      socket.destroy();
      resolve({ text, ms: Date.now() - t0, closedByServer: false });
    }, giveUpMs);
    socket.once('close', () => {
      clearTimeout(giveUp);
      clearInterval(drip);
      resolve({ text, ms: Date.now() - t0, closedByServer: true });
    });
  });
  return { done, bytesSent: () => sent };
}

/** A connection that sends its request headers one byte at a time (classic slowloris). */
function slowHeaders(port: number, everyMs = 500): { stop(): void; bytesSent(): number } {
  const socket = net.connect(port, '127.0.0.1');
  const line = 'GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ';
  let i = 0;
  socket.on('error', () => {});
  const drip = setInterval(() => {
    if (socket.writable) socket.write(line[i++] ?? 'a');
  }, everyMs);
  socket.once('close', () => clearInterval(drip));
  return {
    stop() {
      clearInterval(drip);
      socket.destroy();
    },
    bytesSent: () => i,
  };
}

const bodyOf = (answer: string) => JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));

describe(`a request body that trickles in (${ENGINE})`, () => {
  it('is cut off with 408 REQUEST_TIMEOUT in the envelope within BODY_TIMEOUT_MS, and logged below error', async () => {
    const { svc, env, port } = await start({ BODY_TIMEOUT_MS: '1500' });
    const slow = slowBody(port, env.CDP_INITIAL_ADMIN_KEY!, { everyMs: 100, giveUpMs: 8000 });
    const { text, ms, closedByServer } = await slow.done;
    console.log(`slow body (${ENGINE}): answered after ${ms} ms, ${slow.bytesSent()} body bytes sent`);

    expect(closedByServer).toBe(true);
    expect(text).toMatch(/^HTTP\/1\.1 408 /);
    expect(text).toMatch(/content-type: application\/json/i);
    expect(text).toMatch(/connection: close/i);
    expect(bodyOf(text)).toMatchObject({ status: 'error', error_code: 'REQUEST_TIMEOUT' });
    expect(ms).toBeGreaterThanOrEqual(1400);
    expect(ms).toBeLessThan(3500);
    // The service carries on, and the cut-off is no error of its own: once stopped, it has written
    // every line it will, none at warn or above.
    expect((await fetch(`${svc.url}/health`)).status).toBe(200);
    expect((await svc.stop()).code).toBe(0);
    expect(svc.logs().filter((l) => (l.level as number) >= 40)).toEqual([]);
  });

  it('does not stop the service from serving others while hundreds of slow clients hold connections', async () => {
    const { svc, env, port } = await start({ BODY_TIMEOUT_MS: '4000' });
    const key = env.CDP_INITIAL_ADMIN_KEY!;
    const bodies = Array.from({ length: 150 }, () => slowBody(port, key, { everyMs: 500, giveUpMs: 12_000 }));
    const stops = Array.from({ length: 150 }, () => slowHeaders(port));
    // All 300 hold a connection and have begun to trickle.
    await waitUntil(() => [...bodies, ...stops].every((c) => c.bytesSent() > 0), {
      what: 'every slow client to be connected and sending',
      timeoutMs: 30_000,
    });

    const t0 = Date.now();
    const health = await fetch(`${svc.url}/health`);
    const ingest = await request(svc.url!, 'POST', '/api/ingest', {
      key,
      body: { event_type: 'track', event_name: 'Served', anonymous_id: randomUUID() },
    });
    const ms = Date.now() - t0;
    console.log(`/health + one ingest beside 300 slow connections (${ENGINE}): ${ms} ms`);
    expect(health.status).toBe(200);
    expect(ingest.status).toBe(202);
    expect(ms).toBeLessThan(2000);

    // Every slow body is cut off by its deadline; the slow headers by theirs (min(60 s, BODY_TIMEOUT_MS)).
    const outcomes = await Promise.all(bodies.map((b) => b.done));
    expect(outcomes.filter((o) => o.closedByServer && /^HTTP\/1\.1 408 /.test(o.text))).toHaveLength(150);
    for (const s of stops) s.stop();
    expect((await svc.stop()).code).toBe(0);
  });
});

describe(`SIGTERM with a slow client attached (${ENGINE})`, () => {
  it('closes it at the deadline, exits 0 within SHUTDOWN_TIMEOUT_MS, and keeps every acknowledged event', async () => {
    const store: Record<string, string> = {};
    if (!process.env.DATABASE_URL) {
      const dir = mkdtempSync(join(tmpdir(), 'cdp-slow-'));
      dirs.push(dir);
      store.DATA_DIR = join(dir, 'data');
    }
    const { svc, env, port } = await start({ ...store, SHUTDOWN_TIMEOUT_MS: '3000' });
    const key = env.CDP_INITIAL_ADMIN_KEY!;

    const acknowledged: string[] = [];
    for (let i = 0; i < 20; i++) {
      const res = await request(svc.url!, 'POST', '/api/ingest', {
        key,
        body: {
          event_type: 'track',
          event_name: 'Before SIGTERM',
          anonymous_id: randomUUID(),
          payload: { i },
        },
      });
      expect(res.status).toBe(202);
      acknowledged.push(res.body.event_id);
    }
    // A body that would take 30,000 s to arrive; its request is in flight when the signal comes.
    const slow = slowBody(port, key, { everyMs: 1000, giveUpMs: 20_000 });
    await waitUntil(() => slow.bytesSent() > 0, { what: 'the slow body to begin to trickle' });
    const t0 = Date.now();
    svc.kill('SIGTERM');
    const exit = await svc.exited;
    const ms = Date.now() - t0;
    const closed = await slow.done;
    console.log(`SIGTERM with a slow body attached (${ENGINE}): exit ${JSON.stringify(exit)} after ${ms} ms`);

    expect(exit).toEqual({ code: 0, signal: null });
    expect(ms).toBeLessThan(3000 + 1000);
    expect(closed.closedByServer).toBe(true);
    const said = svc.logs().map((l) => l.msg);
    expect(said).toContain('closing the connections still open at the shutdown deadline');
    expect(said).toContain('stopped');
    expect(svc.logs().filter((l) => (l.level as number) >= 50)).toEqual([]);

    // Restarted on the same data: every event acknowledged before the signal is there.
    const rt = await createRuntime(loadConfig({ ...env, LOG_LEVEL: 'silent' }), createLogger('silent'));
    runtimes.push(rt);
    const { rows } = await rt.deps.db.query<{ id: string }>(
      'SELECT id FROM events WHERE id = ANY($1::text[])',
      [acknowledged],
    );
    expect(rows.map((r) => r.id).sort()).toEqual([...acknowledged].sort());
  });
});

/** A live event stream over a raw socket; it reads until told to stop, as a stalled tab would. */
function streamClient(port: number, key: string) {
  const socket = net.connect(port, '127.0.0.1');
  let text = '';
  socket.setEncoding('utf8');
  socket.on('data', (d: string) => {
    text += d;
  });
  socket.on('error', () => {});
  socket.once('connect', () =>
    socket.write(
      `GET /tenant/events/stream HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\nAccept: text/event-stream\r\n\r\n`,
    ),
  );
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return {
    text: () => text,
    pause: () => socket.pause(),
    resume: () => socket.resume(),
    destroy: () => socket.destroy(),
    closed,
  };
}

/** Resident memory of a process, in MB, as Linux reports it. */
const rssMb = (pid: number) =>
  Number(/^VmRSS:\s*(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

/** Samples a process's RSS every 50 ms while `work` runs; answers the highest, in MB. */
async function peakRss(pid: number, work: () => Promise<void>): Promise<number> {
  let peak = rssMb(pid);
  const timer = setInterval(() => {
    peak = Math.max(peak, rssMb(pid));
  }, 50);
  try {
    await work();
  } finally {
    clearInterval(timer);
  }
  return Math.max(peak, rssMb(pid));
}

/** `n` events of ≈ 30 KB each (incompressible), in one batch request. */
async function sendBlobs(url: string, key: string, n: number, tag: string): Promise<void> {
  const batch = Array.from({ length: n }, (_, i) => ({
    event_type: 'track',
    event_name: `Flood ${tag}`,
    anonymous_id: randomUUID(),
    payload: { blob: randomBytes(15_000).toString('hex'), i },
  }));
  const res = await request(url, 'POST', '/tenant/ingest/batch', { key, body: batch });
  expect(res.status).toBe(202);
}

const STALLED = 9;

describe(`live event streams whose clients stopped reading (${ENGINE})`, () => {
  it('hold at most their byte bound each, then end, and tell a client that reads again why', async () => {
    const { svc, env, port } = await start();
    const key = env.CDP_INITIAL_ADMIN_KEY!;
    const ping = async (clients: Array<ReturnType<typeof streamClient>>, name: string) =>
      waitUntil(
        async () => {
          await request(svc.url!, 'POST', '/api/ingest', {
            key,
            body: { event_type: 'track', event_name: name, anonymous_id: randomUUID() },
          });
          return clients.every((c) => c.text().includes(name));
        },
        { what: `every stream to carry ${name}`, timeoutMs: 20_000, intervalMs: 300 },
      );
    const ended = () =>
      svc.logs().filter((l) => l.msg === 'console: ended a live event stream whose client read too slowly');

    // Nine streams whose clients stop reading once they are live, and one that keeps reading (the
    // workspace's ten): it says when the streams have been handed everything.
    const stalled = Array.from({ length: STALLED }, () => streamClient(port, key));
    const probe = streamClient(port, key);
    await ping([...stalled, probe], 'Ping 1');
    for (const c of stalled) c.pause();

    // The issue's flood: 650 events of ≈ 30 KB, as fast as batches of 100 go in.
    const before = rssMb(svc.pid);
    const peak = await peakRss(svc.pid, async () => {
      for (let b = 0; b < 650; b += 100) await sendBlobs(svc.url!, key, Math.min(100, 650 - b), 'A');
      await ping([probe], 'Ping 2');
    });
    const after = rssMb(svc.pid);
    console.log(
      `${STALLED} stalled live streams, 650 events of 30 KB (${ENGINE}): RSS ${before.toFixed(0)} MB before, ` +
        `${peak.toFixed(0)} MB at the peak (+${(peak - before).toFixed(0)}), ${after.toFixed(0)} MB after; ` +
        `${ended().length} streams ended so far`,
    );

    // A steady workload the streams follow (not a burst they skip ahead of) until every stalled one
    // has more waiting than its bound.
    for (let b = 0; b < 650 && ended().length < STALLED; b += 10) {
      await sendBlobs(svc.url!, key, 10, 'B');
      await letTimePass(200, 'a steady workload the live streams follow, not a burst they skip');
    }
    await waitUntil(() => ended().length === STALLED, {
      what: 'the stalled streams to be ended',
      timeoutMs: 30_000,
    });
    // Each held at most its bound when it ended (its own count of the queue and the socket's buffer).
    for (const l of ended())
      expect(Number(l.held_bytes)).toBeLessThanOrEqual(
        STREAM_LIMITS.bufferBytes + STREAM_LIMITS.writeChunkBytes,
      );

    // A client that reads again (within the grace an ended stream's last words are kept for) gets
    // what its socket held, then how many it missed and why it ended, and the connection closes.
    for (const c of stalled) c.resume();
    await Promise.all(stalled.map((c) => c.closed));
    for (const c of stalled) {
      const said = c.text();
      expect(said).toMatch(/event: dropped\ndata: \{"count":\d+\}\n\n/);
      // Its last words, in the stream's last chunk (the response is chunked: 0-length chunk last).
      expect(said).toMatch(
        /event: end\ndata: \{"reason":"the client read too slowly[^"]*"\}\n\n\r\n0\r\n\r\n$/,
      );
    }
    // The probe kept reading and was never ended; the places the others held are free again.
    expect(probe.text()).toContain('Ping 2');
    probe.destroy();
    const again = Array.from({ length: 10 }, () => streamClient(port, key));
    await ping(again, 'Ping 3');
    for (const c of again) c.destroy();
    expect((await svc.stop()).code).toBe(0);
  });
});
