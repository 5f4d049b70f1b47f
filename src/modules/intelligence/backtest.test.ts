import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../../../test/expect-error';
import { startTestService, type TestService, type TestWorkspace } from '../../../test/harness';
import { BACKTESTS_KEPT } from './backtest';
import { day2025, loadOrders, loadTwoCustomers } from './intelligence.test-kit';
import { CALIBRATION_END, HOLDOUT_END, parseCdnow, readCdnowFile } from './models/cdnow.fixture';
import { selectPurchaseModel } from './models/purchase-fit';
import { mergePurchaseDays, summarizeCustomers, type Transaction } from './models/summaries';

/**
 * A back-test (a fit with an `as_of` in the past) on a workspace holding the CDNOW sample: it never
 * changes what production sees (the profiles' scores, the live fit's customer_scores, the outbox),
 * it answers a holdout evaluation computed from the workspace's orders after `as_of`, and its
 * per-profile scores are read back under its fit id.
 */
let svc: TestService;
let cdnow: TestWorkspace;
let ids: Map<number, string>;
let histories: Map<number, Transaction[]>;
let liveBefore: Snapshot;
let liveAfter: Snapshot;
// biome-ignore lint/suspicious/noExplicitAny: the API's answer, read field by field
let backtest: { status: number; body: { data: any } };

interface Snapshot {
  profiles: unknown[];
  scores: unknown[];
  outbox: number;
  escalations: number;
}

async function snapshot(): Promise<Snapshot> {
  const db = svc.rt.deps.db;
  const profiles = await db.query(
    `SELECT id, predicted_clv, churn_risk_score, rfm_segment FROM profiles WHERE workspace_id = $1 ORDER BY id`,
    [cdnow.id],
  );
  const scores = await db.query(
    `SELECT profile_id, fit_id, as_of, p_alive, expected_purchases, predicted_clv, churn_risk_score, rfm_segment,
            escalated, scored_at
       FROM customer_scores WHERE workspace_id = $1 ORDER BY profile_id`,
    [cdnow.id],
  );
  const outbox = await db.query<{ n: number; escalations: number }>(
    `SELECT count(*)::int AS n, count(*) FILTER (WHERE type = 'churn.risk_escalated')::int AS escalations
       FROM outbox WHERE workspace_id = $1`,
    [cdnow.id],
  );
  return {
    profiles: profiles.rows,
    scores: scores.rows,
    outbox: outbox.rows[0]!.n,
    escalations: outbox.rows[0]!.escalations,
  };
}

const postFit = (body?: unknown) =>
  svc.call('POST', '/intelligence/models/fit', {
    key: cdnow.adminKey,
    ...(body === undefined ? {} : { body }),
  });

beforeAll(async () => {
  svc = await startTestService();
  cdnow = await svc.newWorkspace('cdnow-backtest');
  histories = parseCdnow(readCdnowFile('CDNOW_sample.txt'), 'sample');
  ids = await loadOrders(svc.rt.deps.db, cdnow.id, histories);
  // Live: as of now, every CDNOW customer has been silent for decades, so many are escalated.
  const live = await postFit({ model: 'bg_nbd' });
  expect(live.status, live.text).toBe(200);
  liveBefore = await snapshot();
  backtest = await postFit({ model: 'bg_nbd', as_of: CALIBRATION_END, holdout_end: HOLDOUT_END });
  liveAfter = await snapshot();
}, 120_000);
afterAll(async () => svc?.close());

describe('a back-test (POST /intelligence/models/fit with an as_of in the past)', () => {
  it('leaves the live scores alone: profiles’ score columns and the live fit’s customer_scores', () => {
    expect(backtest.status, JSON.stringify(backtest.body)).toBe(200);
    expect(liveBefore.escalations).toBeGreaterThan(0);
    expect(liveAfter.profiles).toEqual(liveBefore.profiles);
    expect(liveAfter.scores).toEqual(liveBefore.scores);
  });

  it('writes nothing to the outbox, so no webhook fires', () => {
    expect(liveAfter.outbox).toBe(liveBefore.outbox);
  });

  it('is not the live fit: the next fit as of now sends no escalation caused by the back-test', async () => {
    const models = await svc.call('GET', '/intelligence/models', { key: cdnow.adminKey });
    expect(models.body.data.every((m: { fit_id: string }) => m.fit_id !== backtest.body.data.fit_id)).toBe(
      true,
    );
    const again = await postFit({ model: 'bg_nbd' });
    expect(again.status, again.text).toBe(200);
    expect((await snapshot()).escalations).toBe(liveBefore.escalations);
  });

  it('answers the published fit with standard errors, under its own fit id, marked as a back-test', () => {
    const d = backtest.body.data;
    expect(d.fit_id).toMatch(/^fit_/);
    expect(d.backtest).toBe(true);
    expect(d.as_of).toBe('1997-09-30T00:00:00.000Z');
    expect(d.params.r).toBeCloseTo(0.243, 3);
    expect(d.params.b).toBeCloseTo(2.426, 2);
    // lifetimes' BetaGeoFitter summary on the same data: r 0.243 (0.0125), α 4.414 (0.378),
    // a 0.793 (0.185), b 2.426 (0.705).
    expect(d.standard_errors.r).toBeCloseTo(0.0125, 3);
    expect(d.standard_errors.alpha).toBeCloseTo(0.378, 2);
    expect(d.standard_errors.a).toBeCloseTo(0.185, 2);
    expect(d.standard_errors.b).toBeCloseTo(0.705, 2);
    expect(d.spend.standard_errors.p).toBeGreaterThan(0);
    expect(d.rescored).toBe(2357);
  });

  it('evaluates the holdout from the workspace’s orders after as_of: totals, per customer, and by calibration purchases 0…7+', () => {
    const e = backtest.body.data.evaluation;
    expect(e.holdout).toEqual({
      from: '1997-09-30T00:00:00.000Z',
      to: '1998-06-30T00:00:00.000Z',
      weeks: 39,
    });
    expect(e.customers).toBe(2357);
    expect(e.actual_purchases).toBe(1882);
    // The same forecast computed here, from the files, with the fitted parameters.
    const params = backtest.body.data.params;
    const model = selectPurchaseModel('bg_nbd');
    const summaries = summarizeCustomers(histories, CALIBRATION_END);
    const bins = Array.from({ length: 8 }, () => ({ n: 0, actual: 0, predicted: 0 }));
    let predicted = 0;
    let absolute = 0;
    const pairs: Array<[number, number]> = [];
    for (const [key, s] of summaries) {
      const list = histories.get(key)!;
      const actual =
        mergePurchaseDays(list, HOLDOUT_END).length - mergePurchaseDays(list, CALIBRATION_END).length;
      const p = model.expectedPurchases(params, 39, s);
      predicted += p;
      absolute += Math.abs(p - actual);
      pairs.push([p, actual]);
      const bin = bins[Math.min(7, s.x)]!;
      bin.n++;
      bin.actual += actual;
      bin.predicted += p;
    }
    expect(e.predicted_purchases).toBeCloseTo(predicted, 6);
    expect(e.per_customer.mean_absolute_error).toBeCloseTo(absolute / summaries.size, 9);
    expect(e.per_customer.correlation).toBeCloseTo(pearson(pairs), 9);
    expect(e.by_calibration_purchases.map((b: { repeat_purchases: string }) => b.repeat_purchases)).toEqual([
      '0',
      '1',
      '2',
      '3',
      '4',
      '5',
      '6',
      '7+',
    ]);
    expect(e.by_calibration_purchases.map((b: { customers: number }) => b.customers)).toEqual([
      1411, 439, 214, 100, 62, 38, 29, 64,
    ]);
    e.by_calibration_purchases.forEach((b: { actual_mean: number; predicted_mean: number }, i: number) => {
      expect(b.actual_mean).toBeCloseTo(bins[i]!.actual / bins[i]!.n, 9);
      expect(b.predicted_mean).toBeCloseTo(bins[i]!.predicted / bins[i]!.n, 9);
    });
    console.log(
      `CDNOW back-test, BG/NBD: holdout actual ${e.actual_purchases}, predicted ${e.predicted_purchases.toFixed(1)}; ` +
        `MAE ${e.per_customer.mean_absolute_error.toFixed(4)}, r ${e.per_customer.correlation.toFixed(4)}\n` +
        e.by_calibration_purchases
          .map(
            (b: {
              repeat_purchases: string;
              customers: number;
              actual_mean: number;
              predicted_mean: number;
            }) =>
              `  ${b.repeat_purchases}: ${b.customers} customers, actual ${b.actual_mean.toFixed(3)}, predicted ${b.predicted_mean.toFixed(3)}`,
          )
          .join('\n'),
    );
  });

  it('is read back: GET /intelligence/models/{fit_id}', async () => {
    const res = await svc.call('GET', `/intelligence/models/${backtest.body.data.fit_id}`, {
      key: await cdnow.key(['viewer']),
    });
    expect(res.status, res.text).toBe(200);
    const { rescored: _, ...stored } = backtest.body.data;
    expect(res.body.data).toEqual(stored);
  });

  it('scores each profile under its fit id: GET /intelligence/clv/{id}?fit= and /churn/{id}?fit=', async () => {
    const id = ids.get(1)!; // x = 2, t_x = 30.43, T = 38.86 at the calibration end
    const key = await cdnow.key(['viewer']);
    const fitId = backtest.body.data.fit_id;
    const clv = await svc.call('GET', `/intelligence/clv/${id}?fit=${fitId}`, { key });
    expect(clv.status, clv.text).toBe(200);
    expect(clv.body.data).toMatchObject({
      profile_id: id,
      as_of: '1997-09-30T00:00:00.000Z',
      model: { name: 'bg_nbd', as_of: '1997-09-30T00:00:00.000Z' },
      holdout: { actual: expect.any(Number) },
    });
    // FHL (2005): E[Y(39) | x = 2, t_x = 30.43, T = 38.86] = 1.226.
    expect(clv.body.data.holdout.predicted).toBeCloseTo(1.226, 2);
    const churn = await svc.call('GET', `/intelligence/churn/${id}?fit=${fitId}`, { key });
    expect(churn.body.data.as_of).toBe('1997-09-30T00:00:00.000Z');
    expect(churn.body.data.days_since_last_order).toBe(Math.round((38.86 - 30.43) * 7));
    // Without `fit`, the live scores (as of now).
    const live = await svc.call('GET', `/intelligence/churn/${id}`, { key });
    expect(live.body.data.as_of).not.toBe('1997-09-30T00:00:00.000Z');
  });

  it('answers 404 for an unknown fit, another workspace’s, and a live fit given as `fit`', async () => {
    const id = ids.get(1)!;
    const liveId = (await svc.call('GET', '/intelligence/models', { key: cdnow.adminKey })).body.data[0]
      .fit_id;
    const other = await svc.newWorkspace('other');
    for (const fitId of ['fit_nope', liveId]) {
      expectError(
        await svc.call('GET', `/intelligence/clv/${id}?fit=${fitId}`, { key: cdnow.adminKey }),
        404,
        'NOT_FOUND',
      );
      expectError(
        await svc.call('GET', `/intelligence/churn/${id}?fit=${fitId}`, { key: cdnow.adminKey }),
        404,
        'NOT_FOUND',
      );
    }
    expectError(
      await svc.call('GET', '/intelligence/models/fit_nope', { key: cdnow.adminKey }),
      404,
      'NOT_FOUND',
    );
    expectError(
      await svc.call('GET', `/intelligence/models/${backtest.body.data.fit_id}`, { key: other.adminKey }),
      404,
      'NOT_FOUND',
    );
  });
});

describe('back-tests kept', () => {
  it(`are the newest ${BACKTESTS_KEPT} per workspace: an older one goes, its scores with it`, async () => {
    const small = await svc.newWorkspace('small-backtests');
    await loadTwoCustomers(svc.rt.deps.db, small.id);
    const day = (n: number) => day2025(n).toISOString();
    const run = async () => {
      const res = await svc.call('POST', '/intelligence/models/fit', {
        key: small.adminKey,
        body: { as_of: day(30), holdout_end: day(60) },
      });
      expect(res.status, res.text).toBe(200);
      return res.body.data.fit_id as string;
    };
    const first = await run();
    const scoresOf = async (fitId: string) =>
      (
        await svc.rt.deps.db.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM backtest_scores WHERE fit_id = $1',
          [fitId],
        )
      ).rows[0]!.n;
    expect(await scoresOf(first)).toBe(2);
    for (let i = 1; i < BACKTESTS_KEPT; i++) await run();
    expect((await svc.call('GET', `/intelligence/models/${first}`, { key: small.adminKey })).status).toBe(
      200,
    );
    const newest = await run();
    expectError(
      await svc.call('GET', `/intelligence/models/${first}`, { key: small.adminKey }),
      404,
      'NOT_FOUND',
    );
    expect(await scoresOf(first)).toBe(0);
    const { rows } = await svc.rt.deps.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM model_backtests WHERE workspace_id = $1',
      [small.id],
    );
    expect(rows[0]!.n).toBe(BACKTESTS_KEPT);
    expect(await scoresOf(newest)).toBe(2);
  });

  it('lose an erased profile’s scores with the profile', async () => {
    const id = ids.get(2)!;
    const fitId = backtest.body.data.fit_id;
    expect(
      (await svc.call('GET', `/intelligence/clv/${id}?fit=${fitId}`, { key: cdnow.adminKey })).body.data
        .p_alive,
    ).not.toBeNull();
    const erased = await svc.call('DELETE', `/tenant/profiles/${id}`, { key: cdnow.adminKey });
    expect(erased.status, erased.text).toBe(200);
    const { rows } = await svc.rt.deps.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM backtest_scores WHERE profile_id = $1',
      [id],
    );
    expect(rows[0]!.n).toBe(0);
  });
});

describe('POST /intelligence/models/fit input', () => {
  it('takes no body at all: every field is optional', async () => {
    const res = await svc.call('POST', '/intelligence/models/fit', { key: cdnow.adminKey });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.backtest).toBe(false);
  });

  it('names the allowed models when the model is unknown', async () => {
    const res = await postFit({ model: 'pareto_nbd' });
    expectError(res, 400, 'VALIDATION_ERROR');
    expect(res.body.message).toMatch(/bg_nbd/);
    expect(res.body.message).toMatch(/mbg_nbd/);
  });

  it.each([
    [{ holdout_end: HOLDOUT_END }, '/holdout_end'],
    [{ as_of: CALIBRATION_END, holdout_end: '1997-09-30T12:00:00Z' }, '/holdout_end'],
    [{ as_of: CALIBRATION_END, holdout_end: '2999-01-01T00:00:00Z' }, '/holdout_end'],
  ])('refuses %j: 400 naming %s', async (body, path) => {
    const res = await postFit(body);
    expectError(res, 400, 'VALIDATION_ERROR');
    expect(res.body.details.map((d: { path: string }) => d.path)).toContain(path);
  });
});

function pearson(pairs: ReadonlyArray<[number, number]>): number {
  const n = pairs.length;
  const mx = pairs.reduce((s, [x]) => s + x, 0) / n;
  const my = pairs.reduce((s, [, y]) => s + y, 0) / n;
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (const [x, y] of pairs) {
    sxy += (x - mx) * (y - my);
    sxx += (x - mx) ** 2;
    syy += (y - my) ** 2;
  }
  return sxy / Math.sqrt(sxx * syy);
}
