import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { waitProcessed } from '../src/modules/processing/processing.test-kit';
import { type PeopleReceiver, startPeopleReceiver } from '../src/modules/webhooks/webhooks.test-kit';
import { type ServiceProcess, startService } from './child';
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

onlyOn('postgres', 'PGlite is one process').describe('a consent withdrawal across processes', () => {
  let svc: TestService;
  let rx: PeopleReceiver;
  const workers: ServiceProcess[] = [];
  let hook: string;

  beforeAll(async () => {
    [svc, rx] = await Promise.all([
      startTestService({ ROLE: 'api', CDP_ALLOW_PRIVATE_WEBHOOKS: '1' }),
      startPeopleReceiver(),
    ]);
    const url = `${rx.url}/consent`;
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
    workers.push(...(await Promise.all([startService(env), startService(env)])));
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop(10_000)));
    await Promise.all([svc?.close(), rx?.close()]);
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

    expect(rx.about(retried).filter((a) => a.arrivedAt > deniedRetried)).toEqual([]);
    expect(rx.about(onTheWire).filter((a) => a.arrivedAt > deniedWire)).toEqual([]);
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
