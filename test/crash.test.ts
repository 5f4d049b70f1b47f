import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
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
import { createIngestKeys, startIngestLoad, unkeptAcks } from './ingest-load';
import { letTimePass, waitUntil } from './wait';

/**
 * The durability promise (docs/ingestion.md: a 202 means stored), tested the hard way: a real `cdp start` process takes
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

/** Spawns `cdp start` and resolves with its address once it logs that it is ready. */
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
      const m = /"msg":"cdp ready"/.test(out) && /"address":"(http:\/\/[^"]+)"/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ proc, url: m[1]! });
      }
    });
  });
}

describe('crash safety of ingestion', () => {
  it('keeps every acknowledged event, exactly once, across a SIGKILL', async () => {
    const started = await startChild();
    child = started.proc;
    const base = started.url;

    const load = startIngestLoad(base, { keys: await createIngestKeys(base, adminKey, CLIENTS) });
    // The load runs for at least MIN_LOAD_MS, then until MIN_ACKS were acknowledged (or MAX_LOAD_MS).
    const loadStart = Date.now();
    await letTimePass(MIN_LOAD_MS, 'the crash must come in the middle of sustained ingest');
    await waitUntil(() => load.acks.length >= MIN_ACKS || Date.now() - loadStart >= MAX_LOAD_MS, {
      what: `${MIN_ACKS} acknowledged events`,
      timeoutMs: MAX_LOAD_MS + 1000,
      intervalMs: 50,
    });
    const died = new Promise((r) => child!.once('exit', r));
    child.kill('SIGKILL');
    await died;
    child = null;
    await load.stop();
    const acks = load.acks;

    expect(acks.length).toBeGreaterThanOrEqual(MIN_ACKS);
    expect(load.refused()).toBe(0);
    // Requests were in flight when the process died: the kill really happened mid-stream.
    expect(load.cutOff()).toBeGreaterThan(0);

    // Restart on the same data (in this process, through the same createRuntime as `cdp start`).
    const config = loadConfig({ ...env, LOG_LEVEL: 'silent', PORT: '0' });
    rt = await createRuntime(config, createLogger('silent'));
    const db = rt.deps.db;

    const ids = acks.map((a) => a.eventId);
    expect(await unkeptAcks(db, acks)).toEqual({ missing: [], duplicated: [], wrongMessage: [] });
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
      let pending = Number.POSITIVE_INFINITY;
      await waitUntil(
        async () => {
          const r = await db.query<{ n: number }>(
            'SELECT count(*)::int AS n FROM events e WHERE e.id = ANY($1::text[]) AND e.seq IN (SELECT seq FROM event_backlog)',
            [ids],
          );
          pending = r.rows[0]!.n;
          return pending === 0;
        },
        {
          what: 'every acknowledged event applied',
          timeoutMs: 8000,
          intervalMs: 100,
          detail: () => ({ pending }),
        },
      );
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
