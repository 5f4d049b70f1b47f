/**
 * Wide trait writes and the event loop (hardening finding 1): the real service (ROLE=all, so the
 * processing worker shares the thread with HTTP) takes the finding's reproductions at full size while
 * a probe GETs /health back to back. Measured: /health latency p50 / p99 / max during each workload,
 * against the ceiling of 50 ms (p99 is the target). Before the fix, a 20,000-key profile update
 * held the thread 18 s, and one batch of 90 identify events with 3,000 traits each 33 s.
 *
 * Workloads, per engine (after 3 s of probing an idle service: the machine's own noise):
 *   1. one POST /tenant/profiles of 20,000 nested keys (now a 400 naming the trait-key limit);
 *   2. the same 20,000 keys the way the limits accept them: 20 writes of 1,000 keys, then 20 more
 *      changing every value (a profile of ≈ 180 KB of attributes, under the 256 KiB limit);
 *   3. one batch of 90 identify events × 3,000 traits for one person (now a 400 naming the limit);
 *   4. the largest such batch the limits accept: 90 events × 1,000 traits, rising timestamps;
 *   5. a batch at every limit at once: as many identify events of 1,000 keys as fit the 4 MiB body,
 *      each rewriting 1,000 keys of the 20,000-key profile of workload 2.
 *
 *   BENCH_ENGINES=pglite npm run bench -- stall
 */
import {
  identifyBatch,
  nestedAttributes,
  probeHealth,
  quantile,
  type Sent,
  send,
  traitName,
  waitForProfile,
} from '../test/stall-workload';
import { engines, note, report, type Service, startService } from './lib';

const CEILING_MS = 50;
const BATCH_BODY_BYTES = 4 * 1024 * 1024;

interface Outcome {
  what: string;
}

/** Runs one workload while probing /health and reports the probe's figures. */
async function measure(svc: Service, name: string, work: () => Promise<Outcome>): Promise<void> {
  const probe = probeHealth(svc.url);
  const t0 = performance.now();
  const result = await work().then(
    (outcome) => ({ outcome }),
    (error: unknown) => ({ error }),
  );
  const samples = await probe.stop();
  if ('error' in result) throw result.error;
  const { outcome } = result;
  const seconds = (performance.now() - t0) / 1000;
  const label = `stall: /health during ${name} (${svc.engine})`;
  const p50 = quantile(samples, 0.5);
  const p99 = quantile(samples, 0.99);
  const max = Math.max(...samples);
  report({
    name: `${label} p99`,
    value: p99,
    unit: 'ms',
    ceiling: { value: CEILING_MS, unit: 'ms' },
    target: `p99 ≤ ${CEILING_MS} ms`,
    pass: p99 <= CEILING_MS,
  });
  for (const [which, value] of [
    ['p50', p50],
    ['max', max],
  ] as const) {
    report({
      name: `${label} ${which}`,
      value,
      unit: 'ms',
      ceiling: { value: CEILING_MS, unit: 'ms' },
      target: 'info',
    });
  }
  note(`${samples.length} probes over ${seconds.toFixed(1)} s; ${outcome.what}`);
}

const expectStatus = (res: Sent, status: number, what: string) => {
  if (res.status !== status)
    throw new Error(
      `${what}: expected ${status}, got ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`,
    );
};

/** Sends a batch that must be accepted, then waits until the worker has applied it to the profile. */
async function applyBatch(
  url: string,
  key: string,
  body: string,
  identity: string,
  applied: (p: Parameters<Parameters<typeof waitForProfile>[3]>[0]) => boolean,
  timeoutMs: number,
): Promise<Outcome> {
  const res = await send(url, key, 'POST', '/tenant/ingest/batch', body);
  expectStatus(res, 202, `batch for ${identity}`);
  await waitForProfile(url, key, identity, applied, timeoutMs);
  return { what: `${(body.length / 1e6).toFixed(1)} MB, 202 in ${res.ms.toFixed(0)} ms, then applied` };
}

async function runEngine(svc: Service): Promise<void> {
  const key = svc.adminKey;
  const url = svc.url;

  // 0. The machine's own noise: the same probe with nothing else to do (this machine is shared).
  await measure(svc, 'nothing (idle service, 3 s)', async () => {
    await new Promise((r) => setTimeout(r, 3000));
    return { what: 'baseline' };
  });

  // 1. One write of 20,000 keys.
  const huge = JSON.stringify({ identity: 'crm-huge', attributes: nestedAttributes(100, 199, 1) });
  await measure(svc, 'one 20,000-key profile write', async () => {
    const res = await send(url, key, 'POST', '/tenant/profiles', huge);
    return {
      what: `answered ${res.status} in ${res.ms.toFixed(0)} ms: ${res.body?.details?.[0]?.message ?? ''}`,
    };
  });

  // 2. The same keys within the limits, then every one changed.
  const writes = (value: number) =>
    Array.from({ length: 20 }, (_, g) =>
      JSON.stringify({ identity: 'crm-grown', attributes: nestedAttributes(1, 999, value, g) }),
    );
  const bodies = [...writes(1), ...writes(2)];
  await measure(svc, '40 profile writes of 1,000 keys (20,000-key profile)', async () => {
    let slowest = 0;
    for (const body of bodies) {
      const res = await send(url, key, 'POST', '/tenant/profiles', body);
      expectStatus(res, 200, 'profile write');
      slowest = Math.max(slowest, res.ms);
    }
    return { what: `40 × 200, slowest write ${slowest.toFixed(0)} ms` };
  });

  // 3. The finding's batch: 90 identify events × 3,000 traits.
  const refused = JSON.stringify(identifyBatch('ninety-3000@example.com', 90, 3000));
  await measure(svc, 'a batch of 90 identify events × 3,000 traits', async () => {
    const res = await send(url, key, 'POST', '/tenant/ingest/batch', refused);
    return {
      what: `${(refused.length / 1e6).toFixed(1)} MB answered ${res.status} in ${res.ms.toFixed(0)} ms: ${res.body?.details?.[0]?.message ?? ''}`,
    };
  });

  // 4. The largest version of it the limits accept.
  const accepted = JSON.stringify(identifyBatch('ninety-1000@example.com', 90, 1000));
  await measure(svc, 'a batch of 90 identify events × 1,000 traits, applied', () =>
    applyBatch(
      url,
      key,
      accepted,
      'ninety-1000@example.com',
      (p) => p.attributes[traitName(999)] === 89,
      300_000,
    ),
  );

  // 5. Every limit at once, on the 20,000-key profile.
  const from = Date.now() + 60_000;
  const events: unknown[] = [];
  let bytes = 2;
  for (let e = 0; e < 1000; e++) {
    const ev = {
      event_type: 'identify',
      event_name: 'Traits',
      identity: 'crm-grown',
      payload: nestedAttributes(1, 999, 100 + (e % 800), e % 20),
      timestamp: new Date(from + e * 1000).toISOString(),
    };
    const size = JSON.stringify(ev).length + 1;
    if (bytes + size > BATCH_BODY_BYTES - 1024) break;
    events.push(ev);
    bytes += size;
  }
  const last = events[events.length - 1] as { payload: Record<string, Record<string, number>> };
  const [lastGroup, lastValues] = Object.entries(last.payload)[0]!;
  const atLimits = JSON.stringify(events);
  await measure(
    svc,
    `a 4 MiB batch of ${events.length} identify events × 1,000 keys on a 20,000-key profile`,
    () =>
      applyBatch(
        url,
        key,
        atLimits,
        'crm-grown',
        (p) => p.attributes[lastGroup]?.k998 === lastValues.k998,
        600_000,
      ),
  );
}

export default async function run(): Promise<void> {
  for (const engine of await engines()) {
    const svc = await startService({ engine, env: { ROLE: 'all' } });
    try {
      await runEngine(svc);
    } finally {
      await svc.stop();
    }
  }
}

// Runnable on its own too: `node --import tsx bench/stall.bench.ts`.
if (import.meta.url === `file://${process.argv[1]}`) {
  run().then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
      process.exit(1);
    },
  );
}
