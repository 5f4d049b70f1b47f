/**
 * A fresh backlog, tried as a new user would (issue 30, "the embedded database stays fair while it
 * works"): workspace A, made through the operator API, sends BENCH_FRESH_EVENTS events (20,000 by
 * default: 2,000 people, ten `Added to Cart` each with a price) through POST /tenant/ingest/batch as
 * fast as it is answered, and at once, its processing still running, asks for the heaviest event
 * query the language has (test/neighbour-workload.ts HEAVY_QUERY: a payload filter over the whole
 * history, count ≥ 2) over and over until its backlog has drained. Meanwhile workspace B sends its
 * single events and reads, paced (quietTraffic), as it did for as long before A began.
 *
 * Everything goes through the API and the pipeline; nothing is written to a table. Targets, from the
 * same run: every calculation ≤ 1 s and none refused for its budget; B's single-ingest p95 with A
 * working ≤ max(4× its p95 with A idle, 50 ms), and no 5xx.
 *
 *   npm run bench -- fresh-backlog
 *   BENCH_ENGINES=pglite BENCH_FRESH_EVENTS=20000 npm run bench -- fresh-backlog
 */

import { randomBytes } from 'node:crypto';
import { HEAVY_QUERY, quantile, quietTraffic, type Sample } from '../test/neighbour-workload';
import { engines, note, report, type Service, startService } from './lib';

const EVENTS = Number(process.env.BENCH_FRESH_EVENTS ?? 20_000);
const PER_PERSON = 10;
const BATCH = 500;
/** B's quiet traffic before A starts, for its idle p95. */
const IDLE_SECONDS = 10;

async function call(
  svc: Pick<Service, 'url'>,
  auth: Record<string, string>,
  method: string,
  path: string,
  body?: unknown,
  // biome-ignore lint/suspicious/noExplicitAny: the API's answer, read field by field after its status
): Promise<{ status: number; body: any; ms: number }> {
  const t0 = performance.now();
  const res = await fetch(`${svc.url}${path}`, {
    method,
    headers: { ...auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, ms: performance.now() - t0 };
}

/** A's events: people in turn, prices 1–40, spread over the last year. */
function eventsOf(from: number, count: number): unknown[] {
  const now = Date.now();
  return Array.from({ length: count }, (_, k) => {
    const i = from + k;
    const person = Math.floor(i / PER_PERSON);
    return {
      identity: `shopper${person}@fresh.example`,
      event_type: 'track',
      event_name: 'Added to Cart',
      timestamp: new Date(now - ((i * 7919) % 365) * 86_400_000).toISOString(),
      payload: { price: 1 + ((i * 31) % 40), sku: `sku-${i % 97}` },
    };
  });
}

export default async function run(): Promise<void> {
  for (const engine of await engines()) {
    const token = randomBytes(24).toString('base64url');
    const svc = await startService({ engine, env: { CDP_OPERATOR_TOKEN: token } });
    try {
      const created = await call(svc, { authorization: `Bearer ${token}` }, 'POST', '/system/workspaces', {
        name: 'fresh shop',
      });
      if (created.status !== 200)
        throw new Error(`workspace: ${created.status} ${JSON.stringify(created.body)}`);
      const aAuth = { 'x-api-key': created.body.data.api_key.api_key as string };
      // As a shop importing its history would: its own batch limit raised first.
      const limits = await call(svc, aAuth, 'PATCH', '/tenant/settings', {
        rate_limits: { batch_events_per_minute: 1_000_000, requests_per_minute: 100_000 },
      });
      if (limits.status !== 200) throw new Error(`settings: ${limits.status} ${JSON.stringify(limits.body)}`);
      const b = { url: svc.url, key: svc.adminKey };

      const idle = await quietTraffic(b, performance.now() + IDLE_SECONDS * 1000);

      // A: its history in batches, then the heaviest query until the backlog has drained; B goes on
      // at its pace meanwhile, one second of traffic at a time until A is done.
      let aDone = false;
      const busy: Sample[] = [];
      const bLoop = (async () => {
        while (!aDone) busy.push(...(await quietTraffic(b, performance.now() + 1000)));
      })();
      const operator = { authorization: `Bearer ${token}` };
      const t0 = performance.now();
      const calcs: Array<{ status: number; ms: number; backlog: number; at: number }> = [];
      let ingestedMs = 0;
      try {
        for (let i = 0; i < EVENTS; i += BATCH) {
          const r = await call(
            svc,
            aAuth,
            'POST',
            '/tenant/ingest/batch',
            eventsOf(i, Math.min(BATCH, EVENTS - i)),
          );
          if (r.status !== 202) throw new Error(`batch: ${r.status} ${JSON.stringify(r.body)}`);
        }
        ingestedMs = performance.now() - t0;
        for (;;) {
          const stats = await call(svc, operator, 'GET', '/system/stats');
          const backlog = Number(stats.body?.data?.processing?.backlog ?? 0);
          const r = await call(svc, aAuth, 'POST', '/tenant/segments/calculate', {
            query: HEAVY_QUERY,
            limit: 10,
          });
          calcs.push({ status: r.status, ms: r.ms, backlog, at: performance.now() - t0 });
          if (backlog === 0 && calcs.length >= 5) break;
          if (performance.now() - t0 > 600_000)
            throw new Error('the backlog did not drain within 10 minutes');
        }
      } finally {
        aDone = true;
        await bLoop;
      }
      const drainedMs = performance.now() - t0;
      const slow = calcs.filter((c) => c.ms > 1000);
      if (slow.length > 0)
        note(
          `${engine}: over 1 s: ${slow.map((c) => `${Math.round(c.ms)} ms (${c.status}, ${c.backlog} waiting, at ${Math.round(c.at / 1000)} s)`).join('; ')}`,
        );
      note(
        `${engine}: ${EVENTS} events sent in ${Math.round(ingestedMs)} ms, drained after ${Math.round(drainedMs)} ms; ` +
          `${calcs.length} calculations (${calcs.filter((c) => c.backlog > 0).length} with events waiting, the first with ${calcs[0]?.backlog ?? '-'}), ` +
          `statuses ${[...new Set(calcs.map((c) => c.status))].join(',')}; B sent ${busy.length} requests meanwhile`,
      );
      const worst = Math.max(...calcs.map((c) => c.ms));
      report({
        name: `heaviest event calculation while ${EVENTS} fresh events are processed, max of ${calcs.length} (${engine})`,
        value: worst,
        unit: 'ms',
        ceiling: {
          value: quantile(
            calcs.map((c) => c.ms),
            0.5,
          ),
          unit: 'ms median',
        },
        target: '≤ 1000 ms, none refused',
        pass: worst <= 1000 && calcs.every((c) => c.status === 200),
      });
      const p95 = (samples: readonly Sample[]) =>
        quantile(
          samples.filter((x) => x.kind === 'ingest').map((x) => x.ms),
          0.95,
        );
      const quiet = p95(idle);
      const loud = p95(busy);
      const bound = Math.max(4 * quiet, 50);
      const fivexx = busy.filter((x) => x.status >= 500).length;
      report({
        name: `workspace B's single-event ingest p95 while A's fresh backlog is processed and queried (${engine})`,
        value: loud,
        unit: 'ms',
        ceiling: { value: quiet, unit: 'ms with A idle' },
        target: `≤ max(4× idle, 50 ms) = ${Math.round(bound)} ms, no 5xx`,
        pass: loud <= bound && fivexx === 0,
      });
    } finally {
      await svc.stop();
    }
  }
}
