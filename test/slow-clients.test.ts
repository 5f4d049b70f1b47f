import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../src/config';
import { createLogger } from '../src/platform/logger';
import { createRuntime, type Runtime } from '../src/runtime';
import { killAllChildren, request, type ServiceProcess, serviceEnv, startService } from './child';
import { dropSchema, ENGINE } from './harness';
import { waitUntil } from './wait';

// Each test spawns whole services (seconds each on a busy 2-core machine): allow for it.
vi.setConfig({ testTimeout: 180_000, hookTimeout: 180_000 });

/**
 * Slow clients, over real sockets against a real `cdp start`: a request body trickling in is cut
 * off with 408 in the envelope, many of them do not stop the service serving others, and one still
 * attached at SIGTERM neither keeps the process alive nor costs an acknowledged event.
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
