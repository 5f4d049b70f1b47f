/**
 * The cost of a merge against the history of the profile merged away: an anonymous visitor with
 * 10, 1,000 and 10,000 processed events becomes a known customer, the two ways users do it:
 * - the pipeline: an `identify` carrying the device's anonymous id and the customer's e-mail
 *   (POST /api/ingest), timed as the worker's batch that makes the merge (its claim and steps, from
 *   its `event batch` log line; the COMMIT is not in it), and, as a note, from the POST until
 *   GET /tenant/profiles?identity=<device> answers the customer (which adds the worker's idle
 *   polling, up to 200 ms);
 * - the API: POST /identity/merge {primary: customer, secondary: the anonymous profile}, timed as
 *   the request.
 * Each figure is the median of BENCH_MERGE_REPS merges (fresh people each time), printed beside the
 * 10-event merge of the same path and run as its ceiling: a merge's cost should not grow with the
 * history it moves, so the target is flat (≤ 2× the 10-event merge). A note gives the time the
 * worker took to process the history itself, for scale.
 *
 *   npm run bench -- merge-cost
 *   BENCH_ENGINES=pglite BENCH_MERGE_SIZES=10,1000 BENCH_MERGE_REPS=2 npm run bench -- merge-cost
 */
import { randomUUID } from 'node:crypto';
import { callApi, engines, note, report, type Service, sleep, startService } from './lib';

const SIZES = (process.env.BENCH_MERGE_SIZES ?? '10,1000,10000').split(',').map(Number);
const REPS = Number(process.env.BENCH_MERGE_REPS ?? 3);
const BASE = SIZES[0]!;

interface Batch {
  claimed: number;
  applied: number;
  ms: number;
  merged: boolean;
  steps: Record<string, number>;
}

/** The worker's `event batch` lines (debug) and whether each batch merged (`profiles merged`, info). */
function batchLog() {
  const batches: Batch[] = [];
  let mergedPending = false;
  return {
    batches,
    onLine(line: string) {
      if (!line.startsWith('{')) return;
      const l = JSON.parse(line) as {
        msg?: string;
        claimed?: number;
        applied?: number;
        claim_ms?: number;
        step_ms?: Record<string, number>;
      };
      // The worker logs `profiles merged` just before the batch's own line.
      if (l.msg === 'profiles merged') mergedPending = true;
      if (l.msg !== 'event batch') return;
      const steps = Object.values(l.step_ms ?? {}).reduce((a, b) => a + b, 0);
      batches.push({
        claimed: l.claimed ?? 0,
        applied: l.applied ?? 0,
        ms: (l.claim_ms ?? 0) + steps,
        merged: mergedPending,
        steps: l.step_ms ?? {},
      });
      mergedPending = false;
    },
  };
}

async function call(svc: Service, method: string, path: string, body?: unknown) {
  const res = await callApi(svc, method, path, body);
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${res.text.slice(0, 300)}`);
  return res.body;
}

async function waitFor<T>(what: string, check: () => Promise<T | null> | T | null, timeoutMs = 600_000) {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== null) return v;
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

export default async function run(): Promise<void> {
  for (const engine of await engines()) {
    const log = batchLog();
    // Debug: the worker's per-batch line is what times the pipeline's merge.
    const svc = await startService({ engine, env: { LOG_LEVEL: 'debug' }, onStdoutLine: log.onLine });
    const applied = () => log.batches.reduce((n, b) => n + b.applied, 0);
    let expected = 0;
    const drained = () =>
      waitFor('the worker to apply every event', () => (applied() >= expected ? true : null));
    try {
      /** A known customer and an anonymous visitor with `n` processed events; answers their ids. */
      const people = async (n: number) => {
        const email = `c.${randomUUID()}@example.com`;
        const device = randomUUID();
        const t0 = Date.UTC(2025, 0, 1);
        await call(svc, 'POST', '/tenant/ingest/batch', [
          { identity: email, event_type: 'identify', event_name: 'Signed Up', payload: { plan: 'pro' } },
        ]);
        for (let i = 0; i < n; i += 1_000) {
          const chunk = Array.from({ length: Math.min(1_000, n - i) }, (_, j) => ({
            anonymous_id: device,
            event_type: 'page',
            event_name: 'Viewed',
            payload: { path: `/p/${(i + j) % 200}`, n: i + j },
            timestamp: new Date(t0 + (i + j) * 60_000).toISOString(),
          }));
          await call(svc, 'POST', '/tenant/ingest/batch', chunk);
        }
        const before = log.batches.length;
        expected += n + 1;
        await drained();
        const historyMs = log.batches.slice(before).reduce((t, b) => t + b.ms, 0);
        const idOf = async (identity: string) =>
          (await call(svc, 'GET', `/tenant/profiles?identity=${encodeURIComponent(identity)}`)).data[0]
            .id as string;
        return { email, device, customer: await idOf(email), anonymous: await idOf(device), historyMs };
      };

      /** One merge each way against a history of `n` events: the pipeline's, then the API's. */
      const once = async (n: number) => {
        // Through the pipeline: the identify that links the device to the customer.
        const a = await people(n);
        const before = log.batches.length;
        const t0 = performance.now();
        await call(svc, 'POST', '/api/ingest', {
          identity: a.email,
          anonymous_id: a.device,
          event_type: 'identify',
          event_name: 'Signed In',
        });
        expected += 1;
        await waitFor('the device to answer the customer', async () => {
          const found = await call(svc, 'GET', `/tenant/profiles?identity=${a.device}`);
          return found.data[0]?.id === a.customer ? true : null;
        });
        const visible = performance.now() - t0;
        await drained();
        const merge = log.batches.slice(before).find((b) => b.merged);
        if (!merge) throw new Error('no batch logged a merge');

        // Through the API.
        const b = await people(n);
        const t1 = performance.now();
        const merged = await call(svc, 'POST', '/identity/merge', {
          primary_profile_id: b.customer,
          secondary_profile_ids: [b.anonymous],
        });
        const api = performance.now() - t1;
        if (merged.data.merged_profile_ids[0] !== b.anonymous) throw new Error('the API merged nothing');
        const [slowest, slowestMs] = Object.entries(merge.steps).sort((x, y) => y[1] - x[1])[0] ?? ['-', 0];
        return {
          pipeline: merge.ms,
          visible,
          api,
          history: a.historyMs,
          slowest: `${slowest} ${Math.round(slowestMs)}`,
        };
      };

      // Not counted: the first merges of a fresh service run cold (JIT, caches, plans).
      await once(BASE);
      const results = new Map<number, Array<Awaited<ReturnType<typeof once>>>>();
      for (const n of SIZES) {
        const r: Array<Awaited<ReturnType<typeof once>>> = [];
        for (let rep = 0; rep < REPS; rep++) r.push(await once(n));
        results.set(n, r);
        const list = (k: 'pipeline' | 'visible' | 'api') => r.map((x) => Math.round(x[k])).join(' ');
        note(
          `${engine}, ${n} events: pipeline batch ${list('pipeline')} ms, until visible ${list('visible')} ms, ` +
            `API ${list('api')} ms; the pipeline's slowest step (ms) ${r.map((x) => x.slowest).join(', ')}; ` +
            'processing the history itself took ' +
            `${Math.round(median(r.map((x) => x.history)))} ms (median)`,
        );
      }
      const base = results.get(BASE)!;
      for (const n of SIZES) {
        const r = results.get(n)!;
        for (const [path, key] of [
          ['an identify through the pipeline (the batch: claim and steps)', 'pipeline'],
          ['POST /identity/merge', 'api'],
        ] as const) {
          const value = median(r.map((x) => x[key]));
          const ceiling = median(base.map((x) => x[key]));
          report({
            name: `merge of an anonymous profile with ${n} events into a known customer, ${path}, median of ${REPS} (${engine})`,
            value,
            unit: 'ms',
            ceiling: { value: ceiling, unit: `ms for the ${BASE}-event merge` },
            target: n === BASE ? 'the base of the ratio' : `flat: ≤ 2× the ${BASE}-event merge`,
            ...(n === BASE ? {} : { pass: value <= 2 * ceiling }),
          });
        }
      }
    } finally {
      await svc.stop();
    }
  }
}
