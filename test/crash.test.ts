import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config';
import { createLogger } from '../src/platform/logger';
import { createRuntime, type Runtime } from '../src/runtime';
import { WORKERS } from '../src/worker';
import { dropSchema, freshSchemaName } from './harness';

/**
 * The durability promise of contract §4, tested the hard way: a real `cdp start` process takes
 * events from many concurrent clients and is killed with SIGKILL mid-stream (no drain, no
 * shutdown hook). Restarted on the same data, every event it had acknowledged with a 202 must be
 * there exactly once, and (when the processing worker is registered) applied exactly once.
 */
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLIENTS = 20;
/** Load runs at least MIN_LOAD_MS and until MIN_ACKS events are acknowledged (at most MAX_LOAD_MS). */
const MIN_LOAD_MS = 1000;
const MAX_LOAD_MS = 5000;
const MIN_ACKS = 300;

const adminKey = `cdp_sk_${randomBytes(32).toString('base64url')}`;
const pgUrl = process.env.DATABASE_URL ?? null;
const schema = pgUrl ? freshSchemaName() : null;
const dataDir = pgUrl ? null : mkdtempSync(join(tmpdir(), 'cdp-crash-'));
const env: Record<string, string> = {
  CDP_INITIAL_ADMIN_KEY: adminKey,
  LOG_LEVEL: 'info',
  HOST: '127.0.0.1',
  PORT: '0',
  ...(pgUrl ? { DATABASE_URL: pgUrl, DATABASE_SCHEMA: schema! } : { DATA_DIR: dataDir! }),
};

let child: ChildProcess | null = null;
let rt: Runtime | null = null;
afterAll(async () => {
  child?.kill('SIGKILL');
  await rt?.stop();
  if (pgUrl && schema) await dropSchema(pgUrl, schema);
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

/** Spawns `cdp start` and resolves with its address once it logs that it listens. */
function startChild(): Promise<{ proc: ChildProcess; url: string }> {
  const proc = spawn(process.execPath, [join(ROOT, 'bin', 'cdp.mjs'), 'start'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stderr!.setEncoding('utf8').on('data', (d: string) => {
    err += d;
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no start within 90 s\n${out}\n${err}`)), 90_000);
    proc.once('exit', (code) => reject(new Error(`cdp start exited (${code})\n${out}\n${err}`)));
    proc.stdout!.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      const m = /"msg":"cdp listening"/.test(out) && /"address":"(http:\/\/[^"]+)"/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ proc, url: m[1]! });
      }
    });
  });
}

interface Ack {
  eventId: string;
  messageId: string;
  identity: string;
}

const post = async (url: string, key: string, body: unknown) => {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': key },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};

/** One client: single events and small batches, unique message ids, until told to stop or cut off. */
async function client(
  n: number,
  base: string,
  key: string,
  acks: Ack[],
  state: { stop: boolean; cutOff: number; refused: number },
) {
  const identity = `client-${n}@crash.test`;
  for (let i = 0; !state.stop; i++) {
    const size = i % 3 === 2 ? 1 + (i % 5) : 0; // every third request a batch of 1–5
    const events = Array.from({ length: Math.max(1, size) }, (_, j) => ({
      event_type: 'track',
      event_name: 'Crash Test',
      identity,
      anonymous_id: randomUUID(),
      payload: { client: n, seq: i, part: j },
      message_id: `c${n}-r${i}-e${j}`,
    }));
    try {
      if (size === 0) {
        const res = await post(`${base}/api/ingest`, key, events[0]);
        if (res.status === 202)
          acks.push({ eventId: String(res.body.event_id), messageId: events[0]!.message_id, identity });
        else state.refused++;
      } else {
        const res = await post(`${base}/tenant/ingest/batch`, key, events);
        if (res.status === 202) {
          const ids = res.body.event_ids as string[];
          ids.forEach((eventId, j) => {
            acks.push({ eventId, messageId: events[j]!.message_id, identity });
          });
        } else state.refused++;
      }
    } catch {
      // The connection died with the process: this request was never acknowledged.
      state.cutOff++;
      return;
    }
  }
}

describe('crash safety of ingestion', () => {
  it('keeps every acknowledged event, exactly once, across a SIGKILL', async () => {
    const started = await startChild();
    child = started.proc;
    const base = started.url;

    // One key per client: each has its own rate-limit budget, far above what it sends here.
    const keys = await Promise.all(
      Array.from({ length: CLIENTS }, async (_, i) => {
        const res = await post(`${base}/tenant/apikeys`, adminKey, {
          name: `crash ${i}`,
          scopes: ['ingest'],
        });
        expect(res.status).toBe(200);
        return String((res.body.data as { api_key: string }).api_key);
      }),
    );

    const acks: Ack[] = [];
    const state = { stop: false, cutOff: 0, refused: 0 };
    const loops = keys.map((key, i) => client(i, base, key, acks, state));
    const loadStart = Date.now();
    while (
      Date.now() - loadStart < MAX_LOAD_MS &&
      (Date.now() - loadStart < MIN_LOAD_MS || acks.length < MIN_ACKS)
    ) {
      await new Promise((r) => setTimeout(r, 50));
    }
    const died = new Promise((r) => child!.once('exit', r));
    child.kill('SIGKILL');
    await died;
    child = null;
    state.stop = true;
    await Promise.all(loops);

    expect(acks.length).toBeGreaterThanOrEqual(MIN_ACKS);
    expect(state.refused).toBe(0);
    // Requests were in flight when the process died: the kill really happened mid-stream.
    expect(state.cutOff).toBeGreaterThan(0);

    // Restart on the same data (in this process, through the same createRuntime as `cdp start`).
    const config = loadConfig({ ...env, LOG_LEVEL: 'silent', PORT: '0' });
    rt = await createRuntime(config, createLogger('silent'));
    const db = rt.deps.db;

    const ids = acks.map((a) => a.eventId);
    const { rows } = await db.query<{ id: string; message_id: string; n: number }>(
      `SELECT id, min(message_id) AS message_id, count(*)::int AS n
         FROM events WHERE id = ANY($1::text[]) GROUP BY id`,
      [ids],
    );
    const byId = new Map(rows.map((r) => [r.id, r]));
    const missing = acks.filter((a) => !byId.has(a.eventId));
    expect(missing).toEqual([]);
    expect(rows.every((r) => r.n === 1)).toBe(true);
    expect(acks.every((a) => byId.get(a.eventId)!.message_id === a.messageId)).toBe(true);
    const dup = await db.query(
      'SELECT message_id FROM events WHERE message_id IS NOT NULL GROUP BY workspace_id, message_id HAVING count(*) > 1',
    );
    expect(dup.rows).toEqual([]);

    // A client that retries after the crash gets the original id back, not a second copy.
    const sample = acks.filter((_, i) => i % Math.ceil(acks.length / 20) === 0);
    for (const a of sample) {
      const res = await rt.app!.inject({
        method: 'POST',
        url: '/api/ingest',
        headers: { 'x-api-key': adminKey, 'content-type': 'application/json' },
        payload: { event_type: 'track', event_name: 'Retry', identity: a.identity, message_id: a.messageId },
      });
      expect(res.statusCode).toBe(202);
      expect(res.json().event_id).toBe(a.eventId);
    }

    // Once a processing worker exists, every acknowledged event must also be applied exactly once.
    if (WORKERS.some((w) => /process/i.test(w.name))) {
      const deadline = Date.now() + 8000;
      let pending = Number.POSITIVE_INFINITY;
      while (pending > 0 && Date.now() < deadline) {
        const r = await db.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM events e WHERE e.id = ANY($1::text[]) AND e.seq IN (SELECT seq FROM event_backlog)',
          [ids],
        );
        pending = r.rows[0]!.n;
        if (pending > 0) await new Promise((res) => setTimeout(res, 100));
      }
      expect(pending).toBe(0);
      // One identity, one profile: no event was applied twice into a duplicate profile.
      const profiles = await db.query<{ identity: string; n: number }>(
        `SELECT e.identity, count(DISTINCT a.profile_id)::int AS n FROM events e JOIN event_profiles a ON a.seq = e.seq
          WHERE e.id = ANY($1::text[]) GROUP BY e.identity`,
        [ids],
      );
      expect(profiles.rows.every((r) => r.n === 1)).toBe(true);
    }
  }, 150_000);
});
