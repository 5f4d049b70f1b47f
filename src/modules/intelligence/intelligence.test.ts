import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../../../test/expect-error';
import { startTestService, type TestService, type TestWorkspace } from '../../../test/harness';
import { day2025, loadOrders, loadTwoCustomers } from './intelligence.test-kit';
import { CALIBRATION_END, HOLDOUT_END, parseCdnow, readCdnowFile } from './models/cdnow.fixture';

/**
 * The intelligence endpoints on a workspace loaded with the CDNOW sample (2,357 customers, 6,919
 * orders): the fit through the API as of the end of calibration (a back-test) reproduces Fader, Hardie
 * & Lee (2005), and every customer is scored under it. What a back-test leaves alone is in
 * backtest.test.ts.
 */
let svc: TestService;
let cdnow: TestWorkspace;
let ids: Map<number, string>;
let oneTimeBuyer: string;
let fit: {
  status: number;
  body: { data: Record<string, unknown> & { fit_id: string; params: Record<string, number> } };
};
let fitMs = 0;

beforeAll(async () => {
  svc = await startTestService();
  cdnow = await svc.newWorkspace('cdnow');
  const histories = parseCdnow(readCdnowFile('CDNOW_sample.txt'), 'sample');
  ids = await loadOrders(svc.rt.deps.db, cdnow.id, histories);
  const [first] = [...histories].find(([, txs]) => new Set(txs.map((t) => t.at)).size === 1)!;
  oneTimeBuyer = ids.get(first)!;
  const t0 = performance.now();
  fit = await svc.call('POST', '/intelligence/models/fit', {
    key: cdnow.adminKey,
    body: { model: 'bg_nbd', as_of: CALIBRATION_END, holdout_end: HOLDOUT_END },
  });
  fitMs = performance.now() - t0;
  console.log(`CDNOW sample fit + rescore through the API: ${fitMs.toFixed(0)} ms`);
}, 60_000);
afterAll(async () => svc?.close());

describe('POST /intelligence/models/fit on the CDNOW sample, as of the end of calibration', () => {
  it('answers the published BG/NBD parameters and log-likelihood', () => {
    expect(fit.status, JSON.stringify(fit.body)).toBe(200);
    const d = fit.body.data;
    expect(d.model).toBe('bg_nbd');
    expect(d.name).toBe('bg_nbd');
    expect(d.customers).toBe(2357);
    expect(d.params.r).toBeCloseTo(0.243, 3);
    expect(d.params.alpha).toBeCloseTo(4.414, 2);
    expect(d.params.a).toBeCloseTo(0.793, 3);
    expect(d.params.b).toBeCloseTo(2.426, 2);
    expect(d.log_likelihood as number).toBeCloseTo(-9582.4, 1);
    expect(d.as_of).toBe('1997-09-30T00:00:00.000Z');
    expect(d.rescored).toBe(2357);
  });

  it('fits the published Gamma-Gamma spend model beside it', () => {
    const spend = fit.body.data.spend as { model: string; params: Record<string, number>; customers: number };
    expect(spend.model).toBe('gamma_gamma');
    expect(spend.customers).toBe(946);
    expect(spend.params.p).toBeCloseTo(6.25, 1);
    expect(spend.params.q).toBeCloseTo(3.74, 1);
    expect(spend.params.gamma).toBeCloseTo(15.44, 0);
  });

  it('shows the back-test in GET /intelligence/models/{fit_id} to a viewer, not as the live fit', async () => {
    const key = await cdnow.key(['viewer']);
    const res = await svc.call('GET', `/intelligence/models/${fit.body.data.fit_id}`, { key });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ backtest: true, model: 'bg_nbd', spend: { model: 'gamma_gamma' } });
    expect((await svc.call('GET', '/intelligence/models', { key })).body.data).toEqual([]);
  });

  it('scores every customer under the back-test: CLV, churn risk and an RFM segment', async () => {
    const { rows } = await svc.rt.deps.db.query<{ n: number; segments: number; bad: number }>(
      `SELECT count(*)::int AS n, count(DISTINCT rfm_segment)::int AS segments,
              count(*) FILTER (WHERE predicted_clv < 0 OR churn_risk_score NOT BETWEEN 0 AND 1)::int AS bad
         FROM backtest_scores WHERE workspace_id = $1 AND fit_id = $2`,
      [cdnow.id, fit.body.data.fit_id],
    );
    expect(rows[0]).toEqual({ n: 2357, segments: expect.any(Number), bad: 0 });
    expect(rows[0]!.segments).toBeGreaterThanOrEqual(8);
  });

  it('scores every customer on the profile once fitted live (as of now)', async () => {
    const res = await svc.call('POST', '/intelligence/models/fit', {
      key: cdnow.adminKey,
      body: { model: 'bg_nbd' },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data).toMatchObject({ backtest: false, evaluation: null, rescored: 2357 });
    const { rows } = await svc.rt.deps.db.query<{ n: number; bad: number }>(
      `SELECT count(*)::int AS n,
              count(*) FILTER (WHERE predicted_clv < 0 OR churn_risk_score NOT BETWEEN 0 AND 1)::int AS bad
         FROM profiles WHERE workspace_id = $1 AND predicted_clv IS NOT NULL AND rfm_segment IS NOT NULL`,
      [cdnow.id],
    );
    expect(rows[0]).toEqual({ n: 2357, bad: 0 });
  });
});

describe('GET /intelligence/clv/{id} and /intelligence/churn/{id} under the back-test (?fit=)', () => {
  it('answer a one-time buyer: BG/NBD gives P(alive) = 1, so no churn risk, and a small CLV', async () => {
    const id = oneTimeBuyer;
    const under = `?fit=${fit.body.data.fit_id}`;
    const clv = await svc.call('GET', `/intelligence/clv/${id}${under}`, {
      key: await cdnow.key(['viewer']),
    });
    expect(clv.status).toBe(200);
    expect(clv.body.data).toMatchObject({
      profile_id: id,
      currency: 'USD',
      horizon_days: 365,
      p_alive: 1,
      as_of: '1997-09-30T00:00:00.000Z',
      model: {
        name: 'bg_nbd',
        params: { purchase: { r: expect.any(Number) }, spend: { p: expect.any(Number) } },
      },
    });
    expect(clv.body.data.predicted_clv).toBeGreaterThan(0);
    expect(clv.body.data.expected_purchases).toBeGreaterThan(0);
    const churn = await svc.call('GET', `/intelligence/churn/${id}${under}`, { key: cdnow.adminKey });
    expect(churn.body.data).toMatchObject({
      profile_id: id,
      churn_risk_score: 0,
      risk_level: 'low',
      threshold: 0.7,
    });
  });

  it('rank a frequent recent buyer above a lapsed one', async () => {
    const under = `?fit=${fit.body.data.fit_id}`;
    const { rows } = await svc.rt.deps.db.query<{ id: string; clv: number; churn: number }>(
      `SELECT profile_id AS id, predicted_clv AS clv, churn_risk_score AS churn FROM backtest_scores
        WHERE workspace_id = $1 AND fit_id = $2 ORDER BY predicted_clv DESC`,
      [cdnow.id, fit.body.data.fit_id],
    );
    const top = rows[0]!;
    const res = await svc.call('GET', `/intelligence/clv/${top.id}${under}`, { key: cdnow.adminKey });
    expect(res.body.data.predicted_clv).toBeCloseTo(top.clv, 6);
    expect(res.body.data.expected_purchases).toBeGreaterThan(1);
    // Some repeat buyer who then went silent is at high risk under BG/NBD.
    const high = rows.filter((r) => r.churn >= 0.7);
    expect(high.length).toBeGreaterThan(0);
    const churn = await svc.call('GET', `/intelligence/churn/${high[0]!.id}${under}`, {
      key: cdnow.adminKey,
    });
    expect(churn.body.data.risk_level).toBe('high');
    expect(churn.body.data.days_since_last_order).toBeGreaterThan(0);
  });

  it('answer 404 for an unknown id, a malformed one, and another workspace’s profile', async () => {
    for (const id of ['00000000-0000-4000-8000-000000000000', 'nope', ids.get(2)!]) {
      expectError(await svc.call('GET', `/intelligence/clv/${id}`), 404, 'NOT_FOUND');
      expectError(await svc.call('GET', `/intelligence/churn/${id}`), 404, 'NOT_FOUND');
    }
  });
});

describe('POST /intelligence/models/fit validation', () => {
  it.each([
    [{ as_of: '2999-01-01T00:00:00Z' }, '/as_of'],
    [{ as_of: '1969-12-31T23:59:59Z' }, '/as_of'],
    [{ as_of: 'yesterday' }, '/as_of'],
    [{ model: 'pareto_nbd' }, '/model'],
    [{ models: 'bg_nbd' }, ''],
  ])('refuses %j: 400 VALIDATION_ERROR', async (body, path) => {
    const res = await svc.call('POST', '/intelligence/models/fit', { key: cdnow.adminKey, body });
    expectError(res, 400, 'VALIDATION_ERROR');
    if (path) expect(res.body.details.map((d: { path: string }) => d.path)).toContain(path);
  });

  it('is for admins only', async () => {
    const res = await svc.call('POST', '/intelligence/models/fit', {
      key: await cdnow.key(['editor']),
      body: {},
    });
    expectError(res, 403, 'INSUFFICIENT_SCOPE');
  });
});

describe('a workspace with too little data', () => {
  it('without any order, fits the fallback on no customers and scores nobody', async () => {
    const empty = await svc.newWorkspace('empty');
    const res = await svc.call('POST', '/intelligence/models/fit', { key: empty.adminKey, body: {} });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data).toMatchObject({ model: 'fallback_empirical_rate', customers: 0, rescored: 0 });
  });

  it('gets the documented fallback, named in model.name', async () => {
    const small = await svc.newWorkspace('small');
    const few = await loadTwoCustomers(svc.rt.deps.db, small.id);
    const res = await svc.call('POST', '/intelligence/models/fit', {
      key: small.adminKey,
      body: { as_of: day2025(30).toISOString() },
    });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      model: 'fallback_empirical_rate',
      name: 'fallback_empirical_rate+fallback_mean_spend',
      log_likelihood: null,
      customers: 2,
      spend: { model: 'fallback_mean_spend' },
    });
    expect(res.body.data.params.reason).toMatch(/fewer than 100 customers/);
    const clv = await svc.call('GET', `/intelligence/clv/${few.get('a')}?fit=${res.body.data.fit_id}`, {
      key: small.adminKey,
    });
    expect(clv.body.data.model.name).toContain('fallback_');
    expect(clv.body.data.p_alive).toBeGreaterThan(0);
    expect(clv.body.data.p_alive).toBeLessThanOrEqual(1);
  });
});
