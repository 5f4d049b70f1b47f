/**
 * Intelligence (issue 9), the pure models on CDNOW master (23,570 customers, 39-week calibration):
 * parse, summaries, the default fit (MBG/NBD + Gamma-Gamma) and scoring every customer, in this
 * process. The ceiling is one evaluation of the BG/NBD log-likelihood over the same customers,
 * measured in the same run: a fit is a few hundred of those, so the ratio (evaluations per fit)
 * tells the optimizer's cost apart from the machine's speed. Target: a fit ≤ 2 s (issue 9).
 *
 * Then, on PostgreSQL, a synthetic workspace of BENCH_CLV_CUSTOMERS customers (default 1,000,000)
 * drawn from the BG/NBD generative process with CDNOW's parameters, observed up to today:
 * `POST /intelligence/models/fit` through the API (the live fit: fit + rescoring every profile),
 * its time against ≤ 60 s, the service's peak RSS, and how far the fitted parameters land from the
 * known ones; then a back-test as of 13 weeks ago (fit, every customer scored under its own id and
 * evaluated on the 13 weeks since), its time and RSS. Last, the lag from an order's 202 to its
 * profile's new scores (GET /intelligence/clv) under a steady 2,000 events/s (≤ 5 s p95).
 */

import { randomUUID } from 'node:crypto';
import { logLikelihoodBgNbd } from '../src/modules/intelligence/models/bgnbd';
import { CALIBRATION_END, parseCdnow, readCdnowFile } from '../src/modules/intelligence/models/cdnow.fixture';
import { createCustomerScorer, scoreCustomer } from '../src/modules/intelligence/models/customer-score';
import { simulatePurchases } from '../src/modules/intelligence/models/generate';
import { preparePurchaseData } from '../src/modules/intelligence/models/purchase-data';
import { fitPurchaseModel } from '../src/modules/intelligence/models/purchase-fit';
import { summarizeCustomers } from '../src/modules/intelligence/models/summaries';
import { fitWorkspaceModels } from '../src/modules/intelligence/models/workspace-models';
import { engines, load, memoryOf, note, report, type Service, sleep, startService } from './lib';

const best = (runs: number, fn: () => unknown): number => {
  let min = Number.POSITIVE_INFINITY;
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    fn();
    min = Math.min(min, performance.now() - t0);
  }
  return min;
};

export default async function run(): Promise<void> {
  measureCdnowMaster();
  if ((await engines()).includes('postgres')) {
    await measureSyntheticWorkspace();
    await measureRescoringLag();
  }
}

function measureCdnowMaster(): void {
  const t0 = performance.now();
  const customers = [
    ...summarizeCustomers(parseCdnow(readCdnowFile('CDNOW_master.txt'), 'master'), CALIBRATION_END).values(),
  ];
  note(
    `CDNOW master: ${customers.length} customers parsed and summarized in ${(performance.now() - t0).toFixed(0)} ms`,
  );

  const data = preparePurchaseData(customers);
  const once = fitPurchaseModel('bg_nbd', data);
  note(
    `bg_nbd on master: ${JSON.stringify(once.params)} LL ${once.logLikelihood.toFixed(2)} (${once.converged ? 'converged' : 'NOT converged'})`,
  );

  const fitMs = best(3, () => fitWorkspaceModels(customers));
  const models = fitWorkspaceModels(customers);
  const scoreMs = best(3, () => {
    for (const c of customers) scoreCustomer(models, c);
  });
  // What the product's rescoring uses: per-(x, T) sums computed once (a fresh scorer per run).
  const scorerMs = best(3, () => {
    const score = createCustomerScorer(models);
    for (const c of customers) score(c);
  });
  // The ceiling: what one pass of the likelihood over the data costs on this machine right now.
  const llMs = best(20, () => logLikelihoodBgNbd(once.params, data));
  note(`default model ${models.name}; one log-likelihood evaluation ${llMs.toFixed(2)} ms`);
  report({
    name: 'intelligence fit, CDNOW master (mbg_nbd + gamma_gamma)',
    value: fitMs,
    unit: 'ms',
    ceiling: { value: llMs, unit: 'ms per log-likelihood evaluation' },
    target: '≤ 2000 ms',
    pass: fitMs <= 2000,
  });
  report({
    name: `intelligence scoring, CDNOW master (${customers.length} customers)`,
    value: scoreMs,
    unit: 'ms',
    target: 'info',
  });
  report({
    name: `intelligence scoring with the workspace scorer, CDNOW master (${customers.length} customers)`,
    value: scorerMs,
    unit: 'ms',
    target: 'info',
  });
}

const CUSTOMERS = Number(process.env.BENCH_CLV_CUSTOMERS ?? 1_000_000);
const TRUTH = { r: 0.243, alpha: 4.414, a: 0.793, b: 2.426 };
const WEEK_MS = 7 * 86_400_000;
/** Today, UTC midnight: the synthetic customers are observed up to it, and the live fit is as of now. */
const AS_OF = new Date(Math.floor(Date.now() / 86_400_000) * 86_400_000);
const BACKTEST_WEEKS = 13;

/** Customers of the generative process, written as profiles and completed orders (a bulk load). */
async function measureSyntheticWorkspace(): Promise<void> {
  const svc = await startService({ engine: 'postgres', env: { ROLE: 'api' } });
  try {
    const t0 = performance.now();
    // Ages spread over 26–78 weeks, as a shop's customers acquired over a year.
    const ages = Array.from({ length: CUSTOMERS }, (_, i) => 26 + ((i * 7919) % 5200) / 100);
    const customers = simulatePurchases('bg_nbd', TRUTH, ages, 20_260_101);
    let orders = 0;
    await svc.withDb(async (db) => {
      const CHUNK = 50_000;
      for (let from = 0; from < CUSTOMERS; from += CHUNK) {
        const ids: string[] = [];
        const profileIds: string[] = [];
        const at: string[] = [];
        const totals: number[] = [];
        for (let i = from; i < Math.min(CUSTOMERS, from + CHUNK); i++) {
          const c = customers[i]!;
          const id = `00000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;
          profileIds.push(id);
          const first = AS_OF.getTime() - c.T * WEEK_MS;
          for (const t of [0, ...c.purchaseTimes]) {
            ids.push(id);
            at.push(new Date(first + t * WEEK_MS).toISOString());
            totals.push(20 + ((i + ids.length) % 60));
          }
        }
        const offset = orders;
        orders += ids.length;
        await db.query(
          `INSERT INTO profiles (id, workspace_id, created_at) SELECT id, $1, now() FROM unnest($2::uuid[]) AS id`,
          [svc.workspaceId, profileIds],
        );
        await db.query(
          `INSERT INTO orders (workspace_id, order_id, profile_id, status, total, currency, occurred_at, event_id,
                               status_at, completed_at)
           SELECT $1, 'o' || ($5::int + n), pid, 'completed', total, 'USD', at, 'evt_o' || ($5::int + n), at, at
             FROM unnest($2::uuid[], $3::timestamptz[], $4::numeric[]) WITH ORDINALITY AS u(pid, at, total, n)`,
          [svc.workspaceId, ids, at, totals, offset],
        );
      }
      await db.query('ANALYZE profiles');
      await db.query('ANALYZE orders');
    });
    note(
      `synthetic workspace: ${CUSTOMERS} customers, ${orders} orders written in ${((performance.now() - t0) / 1000).toFixed(0)} s`,
    );

    // RSS once a second during the fit: "flat" means the fit's peak does not grow with the customers.
    const idle = memoryOf(svc.pid);
    const { seconds, body, quarters } = await timedFit<{
      params: Record<string, number>;
      rescored: number;
      customers: number;
    }>(svc, { model: 'bg_nbd' });
    const fitted = body.data.params;
    const worst = Math.max(
      ...Object.entries(TRUTH).map(([k, v]) => Math.abs((fitted[k] ?? Number.NaN) - v) / v),
    );
    const rss = memoryOf(svc.pid);
    note(
      `fitted ${JSON.stringify(fitted)} on ${body.data.customers} customers, ${body.data.rescored} rescored; truth ${JSON.stringify(TRUTH)}`,
    );
    note(
      `service RSS: ${idle.rssMb.toFixed(0)} MB idle before the fit; during it, each quarter's peak ${quarters} MB`,
    );
    report({
      name: `intelligence fit + score through the API, ${CUSTOMERS} synthetic customers (postgres)`,
      value: seconds,
      unit: 's',
      target: '≤ 60 s',
      pass: seconds <= 60,
    });
    report({
      name: 'intelligence parameter recovery, worst relative error (postgres)',
      value: worst * 100,
      unit: '%',
      target: 'info',
    });
    report({
      name: 'intelligence fit + score, service peak RSS (postgres)',
      value: rss.hwmMb,
      unit: 'MB',
      target: 'info',
    });
    await measureBacktest(svc);
  } finally {
    await svc.stop();
  }
}

/**
 * POST /intelligence/models/fit with this body, timed, with the service's RSS sampled once a second
 * ("flat" means the peak does not grow with the customers): each quarter's peak, in MB.
 */
async function timedFit<T>(
  svc: Service,
  body: unknown,
): Promise<{ seconds: number; body: { data: T }; quarters: string }> {
  const samples: number[] = [];
  const sampler = setInterval(() => samples.push(memoryOf(svc.pid).rssMb), 1000);
  const t0 = performance.now();
  const res = await fetch(`${svc.url}/intelligence/models/fit`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': svc.adminKey },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(600_000),
  });
  const seconds = (performance.now() - t0) / 1000;
  clearInterval(sampler);
  const answer = (await res.json()) as { data: T };
  if (res.status !== 200) throw new Error(`fit: ${res.status} ${JSON.stringify(answer).slice(0, 300)}`);
  const quarters = [0, 1, 2, 3]
    .map((q) =>
      Math.max(...samples.slice((q * samples.length) >> 2, ((q + 1) * samples.length) >> 2)).toFixed(0),
    )
    .join(' / ');
  return { seconds, body: answer, quarters };
}

/**
 * A back-test of the same workspace as of BACKTEST_WEEKS ago, its holdout the weeks since: the fit,
 * every customer scored under the back-test's id (backtest_scores) and the holdout evaluation.
 */
async function measureBacktest(svc: Service): Promise<void> {
  const asOf = new Date(AS_OF.getTime() - BACKTEST_WEEKS * WEEK_MS);
  const { seconds, body, quarters } = await timedFit<{
    rescored: number;
    evaluation: {
      actual_purchases: number;
      predicted_purchases: number;
      per_customer: { mean_absolute_error: number; correlation: number };
    };
  }>(svc, { model: 'bg_nbd', as_of: asOf.toISOString() });
  const e = body.data.evaluation;
  note(
    `back-test as of ${asOf.toISOString().slice(0, 10)}: ${body.data.rescored} customers scored; holdout ` +
      `${e.actual_purchases} purchase days, predicted ${e.predicted_purchases.toFixed(0)}; MAE ` +
      `${e.per_customer.mean_absolute_error.toFixed(3)}, correlation ${e.per_customer.correlation.toFixed(3)}`,
  );
  note(`service RSS during the back-test, each quarter's peak ${quarters} MB`);
  report({
    name: `intelligence back-test (${BACKTEST_WEEKS}-week holdout) through the API, ${CUSTOMERS} synthetic customers (postgres)`,
    value: seconds,
    unit: 's',
    target: 'info',
  });
}

/**
 * Order → scores on PostgreSQL with the worker running: one customer per probe places an order
 * (after a first one, so the profile exists and the workspace has a fit), and the probe polls its
 * CLV until the scores' as_of moves, while autocannon sends other events at 2,000/s.
 */
async function measureRescoringLag(): Promise<void> {
  const svc = await startService({ engine: 'postgres', env: { ROLE: 'all' } });
  const headers = { 'content-type': 'application/json', 'x-api-key': svc.adminKey };
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${svc.url}${path}`, {
      method,
      headers,
      body: body ? JSON.stringify(body) : undefined,
    });
    return {
      status: res.status,
      json: (await res.json()) as { data: Record<string, unknown> & Array<{ id: string }> },
    };
  };
  const order = (identity: string) =>
    call('POST', '/api/ingest', {
      event_type: 'order',
      event_name: 'Order Completed',
      identity,
      payload: { order_id: `o-${randomUUID()}`, total: 42 },
    });
  try {
    const background = load({
      url: `${svc.url}/api/ingest`,
      method: 'POST',
      headers,
      bodies: Array.from({ length: 5000 }, () =>
        JSON.stringify({ event_type: 'track', event_name: 'Bench Ping', anonymous_id: randomUUID() }),
      ),
      connections: 20,
      overallRate: 2000,
      duration: 10,
      warmup: 2,
    });
    const lags: number[] = [];
    const deadline = Date.now() + 11_000;
    while (Date.now() < deadline) {
      const identity = `lag-${randomUUID()}@example.com`;
      await order(identity);
      let id: string | undefined;
      let before: unknown;
      for (let i = 0; i < 500 && before === undefined; i++) {
        id ??= (await call('GET', `/tenant/profiles?identity=${encodeURIComponent(identity)}`)).json.data[0]
          ?.id;
        if (id) {
          const clv = await call('GET', `/intelligence/clv/${id}`);
          if (clv.json.data.as_of) before = clv.json.data.as_of;
        }
        if (before === undefined) await sleep(20);
      }
      if (!id || before === undefined) continue;
      const sent = await order(identity);
      const t0 = performance.now();
      if (sent.status !== 202) throw new Error(`order: ${sent.status}`);
      for (;;) {
        if ((await call('GET', `/intelligence/clv/${id}`)).json.data.as_of !== before) break;
        if (performance.now() - t0 > 30_000) throw new Error('an order never rescored its profile');
        await sleep(20);
      }
      lags.push(performance.now() - t0);
    }
    const bg = await background;
    lags.sort((a, b) => a - b);
    const p95 = lags[Math.min(lags.length - 1, Math.ceil(0.95 * lags.length) - 1)] ?? Number.NaN;
    note(
      `rescoring lag: ${lags.length} probes, median ${(lags[Math.floor(lags.length / 2)] ?? Number.NaN).toFixed(0)} ms`,
    );
    report({
      name: 'order 202 → its profile rescored, p95, 2,000 events/s (postgres)',
      value: p95,
      unit: 'ms',
      ceiling: { value: bg.rps, unit: 'events/s background' },
      target: '≤ 5000 ms',
      pass: p95 <= 5000,
    });
  } finally {
    await svc.stop();
  }
}
