import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { waitProcessed } from '../src/modules/processing/processing.test-kit';
import { ROOT } from './child';
import { startTestService, type TestService } from './harness';
import { onlyOn } from './skips';
import { letTimePass, waitUntil } from './wait';

/**
 * A consent withdrawal holds on every instance (docs/webhooks.md, "Consent"): the API process that
 * records a denial is not the one delivering. Two worker processes (`ROLE=worker`) deliver a
 * subscription that needs `analytics`; one person's delivery fails and waits for its retry, another's
 * is on the wire (the receiver holds it). Denials go through the API process; once each has answered,
 * no request about that person reaches the receiver, from either worker, the scheduled retry
 * included. PGlite is a single-process database, so this runs in the PostgreSQL pass only.
 */

interface Arrival {
  body: string;
  at: number;
}

function startReceiver() {
  const arrivals: Arrival[] = [];
  const failing = new Set<string>();
  const holds = new Map<string, Promise<void>>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(chunks).toString('utf8');
      arrivals.push({ body, at: Date.now() });
      const hold = [...holds].find(([who]) => body.includes(who));
      if (hold) await hold[1];
      res.writeHead([...failing].some((who) => body.includes(who)) ? 500 : 200).end();
    });
  });
  return {
    server,
    arrivals,
    failing,
    hold(who: string): () => void {
      let release!: () => void;
      holds.set(who, new Promise<void>((r) => (release = r)));
      return () => {
        holds.delete(who);
        release();
      };
    },
    about: (who: string) => arrivals.filter((a) => a.body.includes(who)),
  };
}

interface Worker {
  child: ChildProcess;
  out: () => string;
}

async function startWorker(env: Record<string, string>): Promise<Worker> {
  const base: Record<string, string> = {};
  for (const k of ['PATH', 'HOME', 'TMPDIR', 'LANG']) if (process.env[k]) base[k] = process.env[k]!;
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'cdp.mjs'), 'start'], {
    cwd: ROOT,
    env: { ...base, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (out += d));
  await waitUntil(
    () => {
      if (child.exitCode !== null) throw new Error(`worker exited early:\n${out}`);
      return out.includes('cdp worker running');
    },
    { what: 'the worker to start', timeoutMs: 60_000, intervalMs: 50, detail: () => out },
  );
  return { child, out: () => out };
}

async function stopWorker(w: Worker | undefined): Promise<void> {
  if (!w || w.child.exitCode !== null || w.child.signalCode !== null) return;
  const exited = new Promise((r) => w.child.once('exit', r));
  w.child.kill('SIGTERM');
  const timer = setTimeout(() => w.child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

onlyOn('postgres', 'PGlite is one process').describe('a consent withdrawal across processes', () => {
  let svc: TestService;
  const rx = startReceiver();
  const workers: Worker[] = [];
  let hook: string;

  beforeAll(async () => {
    svc = await startTestService({ ROLE: 'api', CDP_ALLOW_PRIVATE_WEBHOOKS: '1' });
    await new Promise<void>((r) => rx.server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(rx.server.address() as AddressInfo).port}/consent`;
    const sub = await svc.call('POST', '/tenant/webhooks', {
      body: { url, events: ['profile.created'], consent_categories: ['analytics'] },
    });
    expect(sub.status, sub.text).toBe(200);
    hook = sub.body.data.id;
    const env = {
      ROLE: 'worker',
      DATABASE_URL: process.env.DATABASE_URL!,
      DATABASE_SCHEMA: svc.config.databaseSchema!,
      DATA_DIR: ':memory:',
      CDP_ALLOW_PRIVATE_WEBHOOKS: '1',
    };
    workers.push(...(await Promise.all([startWorker(env), startWorker(env)])));
  });

  afterAll(async () => {
    await Promise.all(workers.map(stopWorker));
    await svc?.close();
    await new Promise((r) => rx.server.close(r));
  });

  const identify = async (who: string) => {
    const res = await svc.call('POST', '/api/ingest', {
      body: { event_type: 'identify', event_name: 'Signed up', identity: who },
    });
    expect(res.status, res.text).toBe(202);
  };
  const profileId = async (who: string): Promise<string> =>
    (await svc.call('GET', `/tenant/profiles?identity=${encodeURIComponent(who)}`)).body.data[0].id;
  const deny = async (who: string): Promise<number> => {
    const res = await svc.call('PUT', `/tenant/profiles/${await profileId(who)}/consent`, {
      body: { categories: { analytics: false } },
    });
    expect(res.status, res.text).toBe(200);
    return Date.now();
  };
  const q = async <T>(sql: string, params: unknown[] = []) =>
    (await svc.rt.deps.db.query<T>(sql, params)).rows;

  it('lets nothing about the person reach the receiver once the denial has answered, from any worker', async () => {
    const tag = randomUUID();
    const [retried, onTheWire, witness] = [
      `retried-${tag}@c.test`,
      `wire-${tag}@c.test`,
      `witness-${tag}@c.test`,
    ];
    // One delivery fails and has its retry planned (the default backoff: up to a minute away).
    rx.failing.add(retried);
    await identify(retried);
    await waitProcessed(svc.rt.deps.db);
    await waitUntil(
      async () =>
        (
          await q<{ n: number }>(
            `SELECT count(*)::int AS n FROM webhook_deliveries d JOIN jobs j ON j.key LIKE d.id || '#%'
              WHERE d.subscription_id = $1 AND d.attempts = 1 AND d.status = 'pending' AND j.state = 'queued'`,
            [hook],
          )
        )[0]!.n === 1,
      { what: 'the failed delivery’s retry to be planned', timeoutMs: 20_000 },
    );
    // Another is on the wire: the receiver holds it.
    const release = rx.hold(onTheWire);
    await identify(onTheWire);
    await waitUntil(() => rx.about(onTheWire).length === 1, { what: 'the attempt to reach the receiver' });

    const deniedRetried = await deny(retried);
    let deniedWire = 0;
    const pending = deny(onTheWire).then((t) => (deniedWire = t));
    await letTimePass(
      300,
      'a denial that did not wait for the attempt on the wire would have answered by now',
    );
    expect(deniedWire).toBe(0);
    release();
    await pending;

    // The planned retry comes due now; every job of the cancelled deliveries runs (and does nothing).
    await q(`UPDATE jobs SET run_at = now() WHERE queue = 'webhooks.deliver' AND state = 'queued'`);
    await waitUntil(
      async () =>
        (
          await q<{ n: number }>(
            `SELECT count(*)::int AS n FROM jobs WHERE queue = 'webhooks.deliver' AND state IN ('queued', 'running')`,
          )
        )[0]!.n === 0,
      { what: 'every delivery job to finish' },
    );
    // A fact made after the denials goes out: the workers have moved on.
    await identify(witness);
    await waitUntil(
      async () =>
        (
          await q<{ n: number }>(
            `SELECT count(*)::int AS n FROM webhook_deliveries WHERE subscription_id = $1 AND status = 'delivered'`,
            [hook],
          )
        )[0]!.n === 1,
      { what: 'a later fact delivered', timeoutMs: 20_000 },
    );

    expect(rx.about(retried).filter((a) => a.at > deniedRetried)).toEqual([]);
    expect(rx.about(onTheWire).filter((a) => a.at > deniedWire)).toEqual([]);
    const states = await q<{ status: string }>(
      'SELECT status, attempts FROM webhook_deliveries WHERE subscription_id = $1 ORDER BY seq',
      [hook],
    );
    expect(
      states.map((s) => s.status),
      JSON.stringify(states),
    ).toEqual(['cancelled', 'cancelled', 'delivered']);
  });
});
