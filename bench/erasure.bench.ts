/**
 * Erasure of a person with a long history (issue 29): 10,000 events of which 100 orders, and 1,000
 * webhook deliveries (ten subscriptions to their 100 order.completed facts), loaded through the API.
 * Figures, per engine:
 * - the erasure's time (DELETE /tenant/profiles/{id}), beside the time the same history took to
 *   be taken in through the API (a ceiling of the same rows written, not a target);
 * - a neighbour workspace's single-event ingest p95 while people are erased, beside its p95 while
 *   nothing else happens (target ≤ 2×, no 5xx).
 *
 *   npm run bench -- erasure
 *   BENCH_ENGINES=pglite BENCH_ERASURE_PEOPLE=2 BENCH_ERASURE_EVENTS=2000 npm run bench -- erasure
 */
import { randomUUID } from 'node:crypto';
import { quantile, type Sample } from '../test/neighbour-workload';
import { BENCH_RATE_LIMITS, engines, note, report, sleep, startBareServer, startService } from './lib';

const PEOPLE = Number(process.env.BENCH_ERASURE_PEOPLE ?? 3);
const EVENTS = Number(process.env.BENCH_ERASURE_EVENTS ?? 10_000);
const ORDERS = Number(process.env.BENCH_ERASURE_ORDERS ?? 100);
const SUBSCRIPTIONS = Number(process.env.BENCH_ERASURE_SUBSCRIPTIONS ?? 10);
const IDLE_SECONDS = Number(process.env.BENCH_ERASURE_IDLE_SECONDS ?? 10);

interface Api {
  url: string;
  key: string;
}

async function call(api: Api, method: string, path: string, body?: unknown) {
  const res = await fetch(`${api.url}${path}`, {
    method,
    headers: { 'x-api-key': api.key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : null;
}

/** One person's history through the batch endpoint: page views and orders, in time order. */
async function loadPerson(api: Api, email: string): Promise<void> {
  const start = Date.UTC(2025, 0, 1);
  const every = Math.max(1, Math.floor(EVENTS / ORDERS));
  for (let i = 0; i < EVENTS; i += 1_000) {
    const batch = Array.from({ length: Math.min(1_000, EVENTS - i) }, (_, j) => {
      const n = i + j;
      const timestamp = new Date(start + n * 60_000).toISOString();
      return n % every === every - 1
        ? {
            identity: email,
            event_type: 'order',
            event_name: 'Order Completed',
            payload: {
              order_id: `${email}-${n}`,
              total: 10 + (n % 50),
              items: [{ product_id: 'sku', price: 10, quantity: 1 }],
            },
            timestamp,
          }
        : {
            identity: email,
            event_type: 'page',
            event_name: 'Viewed',
            payload: { path: `/p/${n % 200}`, n },
            timestamp,
          };
    });
    await call(api, 'POST', '/tenant/ingest/batch', batch);
  }
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 600_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(250);
  }
}

/** B's single events, paced at 20 a second, until `stop()` says so. */
async function neighbourIngest(b: Api, stop: () => boolean): Promise<Sample[]> {
  const samples: Sample[] = [];
  for (let n = 0; !stop(); n++) {
    const t0 = performance.now();
    let status = 599;
    try {
      const res = await fetch(`${b.url}/api/ingest`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': b.key },
        body: JSON.stringify({
          identity: `b${n % 50}@example.com`,
          event_type: 'track',
          event_name: 'Viewed',
        }),
      });
      await res.arrayBuffer();
      status = res.status;
    } catch {
      // counted as 599
    }
    samples.push({ kind: 'ingest', ms: performance.now() - t0, status });
    const left = 50 - (performance.now() - t0);
    if (left > 0) await sleep(left);
  }
  return samples;
}

export default async function run(): Promise<void> {
  const receiver = await startBareServer([{ method: 'POST', path: '/hook', status: 200, body: 'ok' }]);
  try {
    for (const engine of await engines()) {
      const svc = await startService({
        engine,
        env: { CDP_ALLOW_PRIVATE_WEBHOOKS: '1', CDP_OPERATOR_TOKEN: 'bench-operator-token-0123456789' },
      });
      try {
        const b: Api = { url: svc.url, key: svc.adminKey };
        const made = await fetch(`${svc.url}/system/workspaces`, {
          method: 'POST',
          headers: {
            authorization: 'Bearer bench-operator-token-0123456789',
            'content-type': 'application/json',
          },
          body: JSON.stringify({ name: 'erased people' }),
        }).then((r) => r.json() as Promise<{ data: { api_key: { api_key: string } } }>);
        const a: Api = { url: svc.url, key: made.data.api_key.api_key };
        await call(a, 'PATCH', '/tenant/settings', BENCH_RATE_LIMITS);
        for (let i = 0; i < SUBSCRIPTIONS; i++) {
          await call(a, 'POST', '/tenant/webhooks', {
            url: `${receiver.url}/hook`,
            events: ['order.completed'],
          });
        }
        const people = Array.from({ length: PEOPLE }, () => `p.${randomUUID()}@example.com`);
        const t0 = performance.now();
        for (const email of people) await loadPerson(a, email);
        const hooks = (await call(a, 'GET', '/tenant/webhooks')).data as Array<{ id: string }>;
        const deliveriesOf = async (hook: string) => {
          let n = 0;
          let cursor: string | null = null;
          do {
            const page: { data: Array<{ status: string }>; pagination: { next_cursor: string | null } } =
              await call(
                a,
                'GET',
                `/tenant/webhooks/${hook}/deliveries?limit=500${cursor ? `&cursor=${cursor}` : ''}`,
              );
            n += page.data.filter((d) => d.status === 'delivered').length;
            cursor = page.pagination.next_cursor;
          } while (cursor);
          return n;
        };
        await waitFor('every delivery to be made', async () => {
          let n = 0;
          for (const h of hooks) n += await deliveriesOf(h.id);
          return n >= PEOPLE * ORDERS * SUBSCRIPTIONS;
        });
        const loadMs = (performance.now() - t0) / PEOPLE;
        const ids: string[] = [];
        for (const email of people) {
          ids.push(
            (await call(a, 'GET', `/tenant/profiles?identity=${encodeURIComponent(email)}`)).data[0].id,
          );
        }

        const idleUntil = performance.now() + IDLE_SECONDS * 1000;
        const idle = await neighbourIngest(b, () => performance.now() > idleUntil);
        let erasing = true;
        const during = neighbourIngest(b, () => !erasing);
        const times: number[] = [];
        const counts: Array<Record<string, number>> = [];
        for (const id of ids) {
          const e0 = performance.now();
          counts.push((await call(a, 'DELETE', `/tenant/profiles/${id}`)).data.counts);
          times.push(performance.now() - e0);
        }
        erasing = false;
        const busy = await during;
        note(
          `${engine}: each person ${EVENTS} events (${ORDERS} orders), ${ORDERS * SUBSCRIPTIONS} deliveries; ` +
            `first erasure's counts ${JSON.stringify(counts[0])}; B sent ${busy.length} events during the erasures`,
        );
        const median = quantile(times, 0.5);
        report({
          name: `erasure of a person with ${EVENTS} events, ${ORDERS} orders, ${ORDERS * SUBSCRIPTIONS} deliveries, median of ${PEOPLE} (${engine})`,
          value: median,
          unit: 'ms',
          ceiling: { value: loadMs, unit: 'ms to take the same history in through the API' },
          target: 'reported (no target: the erasure is sliced for fairness, not speed)',
        });
        const quiet = quantile(
          idle.map((s) => s.ms),
          0.95,
        );
        const loud = quantile(
          busy.map((s) => s.ms),
          0.95,
        );
        const fivexx = busy.filter((s) => s.status >= 500).length;
        report({
          name: `neighbour workspace's single-event ingest p95 during the erasures (${engine})`,
          value: loud,
          unit: 'ms',
          ceiling: { value: quiet, unit: 'ms p95 with nothing else running' },
          target: '≤ 2× idle, no 5xx',
          pass: fivexx === 0 && loud <= 2 * quiet,
        });
      } finally {
        await svc.stop();
      }
    }
  } finally {
    await receiver.stop();
  }
}
