import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  insertTestEvents,
  type TestEvent,
  waitProcessed,
} from '../src/modules/processing/processing.test-kit';
import { type Receiver, startReceiver } from '../src/modules/webhooks/webhooks.test-kit';
import { startTestService, type TestService } from './harness';
import { onlyOn } from './skips';
import { letTimePass, waitUntil } from './wait';

/**
 * Two worker processes (`ROLE=worker node bin/cdp.mjs start`) consume one event stream on one
 * PostgreSQL database while it is being written: every event is applied exactly once, one person
 * ends up as exactly one profile, and no trait update is lost or applied out of order. Both also fan
 * the outbox out to a webhook and deliver it: every fact reaches the receiver exactly once. PGlite is
 * a single-process database, so this runs in the PostgreSQL pass only.
 */
const PG_URL = process.env.DATABASE_URL;
const ROOT = fileURLToPath(new URL('..', import.meta.url));

const CUSTOMERS = 60;
const STEPS = 24;

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
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    out += d;
  });
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    out += d;
  });
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

/**
 * One customer's life, in order: two anonymous devices, a sign-up on the first, a login on the second
 * (whose anonymous profile then merges in), then traits and orders. Each identify appends its own tag,
 * so the final tag list shows the order the events were applied in.
 */
function journey(c: number, t0: number): { email: string; anon: [string, string]; events: TestEvent[] } {
  const email = `customer-${c}@example.com`;
  const anon: [string, string] = [randomUUID(), randomUUID()];
  const at = (i: number) => new Date(t0 + i * 1000).toISOString();
  const events: TestEvent[] = [
    { anonymous_id: anon[0], event_type: 'page', event_name: 'Home', at: at(0) },
    { anonymous_id: anon[1], event_type: 'page', event_name: 'Home', at: at(1) },
  ];
  for (let i = 2; i < STEPS; i++) {
    const device = anon[i % 2]!;
    if (i % 5 === 4) {
      events.push({
        identity: email,
        anonymous_id: device,
        event_type: 'order',
        event_name: 'Order Completed',
        payload: { order_id: `c${c}-o${i}`, total: 1 },
        at: at(i),
      });
    } else {
      events.push({
        identity: email,
        anonymous_id: device,
        event_type: 'identify',
        event_name: 'Traits',
        payload: { tags: i === 2 ? [`t${i}`] : `t${i}`, counter: i, [`k${i}`]: true },
        at: at(i),
      });
    }
  }
  return { email, anon, events };
}

onlyOn('postgres', 'PGlite is one process').describe('two worker processes on one stream', () => {
  let svc: TestService;
  let rx: Receiver;
  const workers: Worker[] = [];

  beforeAll(async () => {
    // The API process of the test owns the schema; it runs no worker itself (ROLE=api).
    [svc, rx] = await Promise.all([
      startTestService({ ROLE: 'api', CDP_ALLOW_PRIVATE_WEBHOOKS: '1' }),
      startReceiver(),
    ]);
    const sub = await svc.call('POST', '/tenant/webhooks', {
      body: { url: `${rx.url}/two`, events: ['profile.created', 'profile.merged', 'order.completed'] },
    });
    expect(sub.status).toBe(200);
    const env = {
      ROLE: 'worker',
      DATABASE_URL: PG_URL!,
      DATABASE_SCHEMA: svc.config.databaseSchema!,
      LOG_LEVEL: 'debug',
      // Small claims, so that each written chunk takes several and both processes get some
      // whichever of them wakes first (with the default 1000 one could take every chunk whole).
      WORKER_BATCH_SIZE: '8',
      DATA_DIR: ':memory:',
      CDP_ALLOW_PRIVATE_WEBHOOKS: '1',
    };
    // One of them with one claiming loop (WORKER_LOOPS), the other with the default two.
    workers.push(...(await Promise.all([startWorker({ ...env, WORKER_LOOPS: '1' }), startWorker(env)])));
  });

  afterAll(async () => {
    await Promise.all(workers.map(stopWorker));
    await Promise.all([svc?.close(), rx?.close()]);
  });

  it('applies every event once, in order per person, with one profile per person, and delivers each resulting fact to a webhook once', async () => {
    const db = svc.rt.deps.db;
    const t0 = Date.parse('2024-01-01T00:00:00Z');
    const people = Array.from({ length: CUSTOMERS }, (_, c) => journey(c, t0));
    // Interleave everyone's events (each person's stay in order) and write them in small chunks
    // while both workers run, so that their batches overlap on the same people.
    const cursors = people.map(() => 0);
    const stream: TestEvent[] = [];
    for (let round = 0; stream.length < CUSTOMERS * STEPS; round++) {
      for (let c = 0; c < CUSTOMERS; c++) {
        const take = 1 + ((c * 7 + round) % 3);
        for (let k = 0; k < take && cursors[c]! < STEPS; k++) stream.push(people[c]!.events[cursors[c]!++]!);
      }
    }
    for (let i = 0; i < stream.length; i += 40) {
      await insertTestEvents(db, svc.ws.id, stream.slice(i, i + 40));
      await letTimePass(5, 'written in chunks while both workers claim');
    }
    await waitProcessed(db, 60_000);

    const q = async <T>(sql: string, params: unknown[] = []) => (await db.query<T>(sql, params)).rows;
    expect(await q('SELECT reason FROM dead_letters')).toEqual([]);
    const [counts] = await q<{ live: number; merged: number; created: number; merges: number }>(
      `SELECT (SELECT count(*) FROM profiles WHERE merged_into IS NULL)::int AS live,
              (SELECT count(*) FROM profiles WHERE merged_into IS NOT NULL)::int AS merged,
              (SELECT count(*) FROM outbox WHERE type = 'profile.created')::int AS created,
              (SELECT count(*) FROM outbox WHERE type = 'profile.merged')::int AS merges`,
    );
    expect(counts).toEqual({
      live: CUSTOMERS,
      merged: CUSTOMERS,
      created: 2 * CUSTOMERS,
      merges: CUSTOMERS,
    });

    const identifies = Array.from({ length: STEPS }, (_, i) => i).filter((i) => i >= 2 && i % 5 !== 4);
    for (const person of people) {
      const found = (await svc.call('GET', `/tenant/profiles?identity=${person.email}`)).body.data;
      expect(found).toHaveLength(1);
      const p = found[0];
      for (const a of person.anon) {
        expect((await svc.call('GET', `/tenant/profiles?identity=${a}`)).body.data[0].id).toBe(p.id);
      }
      expect(p.attributes.tags).toEqual(identifies.map((i) => `t${i}`));
      expect(p.attributes.counter).toBe(identifies[identifies.length - 1]);
      for (const i of identifies) expect(p.attributes[`k${i}`]).toBe(true);
      expect(p.total_spend).toBe(person.events.filter((e) => e.event_type === 'order').length);
      const [row] = await q<{ n: number }>(
        `SELECT count(*)::int AS n FROM event_profiles a JOIN events e ON e.seq = a.seq
            WHERE a.profile_id = $1`,
        [p.id],
      );
      expect(row?.n).toBe(STEPS);
    }

    // Both processes took part.
    const applied = workers.map((w) =>
      w
        .out()
        .split('\n')
        .filter((l) => l.includes('"msg":"event batch"'))
        .reduce((sum, l) => sum + (JSON.parse(l) as { applied: number }).applied, 0),
    );
    expect(applied[0]! + applied[1]!).toBe(CUSTOMERS * STEPS);
    expect(applied[0]).toBeGreaterThan(0);
    expect(applied[1]).toBeGreaterThan(0);
    const started = workers.map((w) => {
      const line = w
        .out()
        .split('\n')
        .find((l) => l.includes('"msg":"processing started"'));
      return (JSON.parse(line!) as { loops: number }).loops;
    });
    expect(started).toEqual([1, 2]);

    // Both processes fanned the outbox out as it was written (each is woken by every commit):
    // each fact became one delivery, sent once.
    const facts =
      CUSTOMERS * 2 +
      CUSTOMERS +
      CUSTOMERS * people[0]!.events.filter((e) => e.event_type === 'order').length;
    const got = await rx.waitFor('/two', facts, 30_000);
    // A duplicate would be a second send of a delivery: wait until every delivery is recorded as
    // delivered and no attempt is left queued or running, so none can still be on its way.
    await waitUntil(
      async () => {
        const [left] = await q<{ n: number }>(
          `SELECT (SELECT count(*) FROM webhook_deliveries WHERE status <> 'delivered')
                  + (SELECT count(*) FROM jobs WHERE queue = 'webhooks.deliver' AND state IN ('queued', 'running'))
                    AS n`,
        );
        return Number(left!.n) === 0;
      },
      { what: 'every delivery to be recorded and no attempt left', timeoutMs: 30_000 },
    );
    const factIds = rx.received.map((r) => (JSON.parse(r.body) as { id: string }).id);
    expect(rx.received).toHaveLength(facts);
    expect(new Set(factIds).size).toBe(facts);
    expect(new Set(got.map((r) => r.headers['x-service-delivery'])).size).toBe(facts);
    const [outbox] = await q<{ n: number }>(
      `SELECT count(*)::int AS n FROM outbox WHERE type IN ('profile.created', 'profile.merged', 'order.completed')`,
    );
    expect(outbox?.n).toBe(facts);
  });
});
