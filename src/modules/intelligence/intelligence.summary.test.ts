import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService, type TestWorkspace } from '../../../test/harness';
import { getSummary } from './intelligence.summary';
import { day2025, loadOrders } from './intelligence.test-kit';
import { labelRfmSegment, type RfmScores, type Transaction } from './models';

/**
 * GET /intelligence/summary and GET /intelligence/backtests: the summary's counts are those a plain
 * read of every profile's score columns gives, an empty workspace answers zeros, another
 * workspace's profiles (and merged-away ones) are never counted, a viewer may read both, and the
 * back-tests are listed newest first, page by page.
 */
let svc: TestService;
let shop: TestWorkspace;
let other: TestWorkspace;
let empty: TestWorkspace;
let viewer: string;

/** A deterministic mix of one-time and repeat buyers over 2025 (mulberry32). */
function histories(n: number, seed: number): Map<number, Transaction[]> {
  let a = seed;
  const rand = () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  const out = new Map<number, Transaction[]>();
  for (let i = 0; i < n; i++) {
    const orders = 1 + Math.floor(rand() * rand() * 8);
    const first = Math.floor(rand() * 300);
    out.set(
      i,
      Array.from({ length: orders }, (_, k) => ({
        at: day2025(first + k * (1 + Math.floor(rand() * 20))),
        amount: Math.round(5 + rand() * rand() * 900),
      })),
    );
  }
  return out;
}

interface Summary {
  profiles_scored: number;
  current_fit: { fit_id: string; model: string; fitted_at: string; as_of: string } | null;
  rfm: { grid: number[][]; profiles_gridded: number; segments: { segment: string; profiles: number }[] };
  clv: {
    buckets: { from: number; to: number | null; profiles: number }[];
    min: number | null;
    max: number | null;
    median: number | null;
    total: number | null;
  };
  churn_risk: { buckets: { from: number; to: number; profiles: number }[] };
}

const summaryOf = async (key: string) => {
  const r = await svc.call('GET', '/intelligence/summary', { key });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return (r.body as { data: Summary }).data;
};

beforeAll(async () => {
  svc = await startTestService();
  shop = await svc.newWorkspace('shop');
  other = await svc.newWorkspace('other');
  empty = await svc.newWorkspace('empty');
  viewer = await shop.key(['viewer']);
  const db = svc.rt.deps.db;
  await loadOrders(db, shop.id, histories(400, 7));
  await loadOrders(db, other.id, histories(150, 11));
  // Profiles without orders are live but unscored: never counted.
  await db.query(
    'INSERT INTO profiles (id, workspace_id) SELECT gen_random_uuid(), $1 FROM generate_series(1, 5)',
    [shop.id],
  );
  for (const ws of [shop, other]) {
    const fit = await svc.call('POST', '/intelligence/models/fit', { key: ws.adminKey, body: {} });
    expect(fit.status, JSON.stringify(fit.body)).toBe(200);
  }
  // A scored profile merged away since is no longer live: its scores are its survivor's business.
  await db.query(
    `UPDATE profiles SET merged_into = (SELECT id FROM profiles WHERE workspace_id = $1 AND rfm_segment IS NULL LIMIT 1)
      WHERE id = (SELECT id FROM profiles WHERE workspace_id = $1 AND rfm_segment IS NOT NULL ORDER BY id LIMIT 1)`,
    [shop.id],
  );
}, 60_000);
afterAll(async () => svc?.close());

describe('GET /intelligence/summary', () => {
  it('counts what every live profile’s stored scores say, cell by cell and bucket by bucket', async () => {
    const { rows } = await svc.rt.deps.db.query<{
      rfm_score: number | null;
      rfm_segment: string | null;
      churn_risk_score: number | null;
      predicted_clv: string | null;
    }>(
      `SELECT rfm_score, rfm_segment, churn_risk_score, predicted_clv FROM profiles
        WHERE workspace_id = $1 AND merged_into IS NULL AND rfm_segment IS NOT NULL`,
      [shop.id],
    );
    const s = await summaryOf(viewer);
    expect(s.profiles_scored).toBe(rows.length);
    expect(rows.length).toBeGreaterThan(390);
    expect(s.rfm.profiles_gridded).toBe(rows.length);

    const grid = Array.from({ length: 5 }, () => [0, 0, 0, 0, 0]);
    for (const r of rows)
      grid[5 - Math.floor(r.rfm_score! / 100)]![(Math.floor(r.rfm_score! / 10) % 10) - 1]! += 1;
    expect(s.rfm.grid).toEqual(grid);
    expect(grid.flat().filter((n) => n > 0).length).toBeGreaterThan(5);

    for (const { segment, profiles } of s.rfm.segments) {
      expect(profiles, segment).toBe(rows.filter((r) => r.rfm_segment === segment).length);
    }
    expect(s.rfm.segments.reduce((n, x) => n + x.profiles, 0)).toBe(rows.length);

    const churn = s.churn_risk.buckets;
    expect(churn).toHaveLength(10);
    for (const b of churn) {
      const want = rows.filter(
        (r) =>
          r.churn_risk_score! >= b.from - 1e-12 &&
          (r.churn_risk_score! < b.to - 1e-12 || (b.to === 1 && r.churn_risk_score! <= 1)),
      ).length;
      expect(b.profiles, `churn ${b.from}`).toBe(want);
    }

    const clvs = rows.map((r) => Number(r.predicted_clv)).sort((a, b) => a - b);
    for (const b of s.clv.buckets) {
      expect(b.profiles, `clv ${b.from}`).toBe(
        clvs.filter((v) => v >= b.from && (b.to === null || v < b.to)).length,
      );
    }
    expect(s.clv.buckets.map((b) => b.from)).toEqual([0, 25, 50, 100, 250, 500, 1000, 2500, 5000]);
    expect(s.clv.min).toBeCloseTo(clvs[0]!, 6);
    expect(s.clv.max).toBeCloseTo(clvs.at(-1)!, 6);
    expect(s.clv.total).toBeCloseTo(
      clvs.reduce((a, b) => a + b, 0),
      4,
    );
    const mid = clvs.length / 2;
    const median = clvs.length % 2 ? clvs[Math.floor(mid)]! : (clvs[mid - 1]! + clvs[mid]!) / 2;
    expect(s.clv.median).toBeCloseTo(median, 6);
  });

  it('answers the same when it reads the workspace in slices, as the embedded database does', async () => {
    const db = svc.rt.deps.db.lane('analytics');
    const whole = await getSummary(db, shop.id);
    for (const sliceSize of [1, 37, 1_000]) {
      const sliced = await getSummary(db, shop.id, { sliceSize });
      expect(sliced.clv.total, `slices of ${sliceSize}`).toBeCloseTo(whole.clv.total!, 4);
      expect({ ...sliced, clv: { ...sliced.clv, total: null } }, `slices of ${sliceSize}`).toEqual({
        ...whole,
        clv: { ...whole.clv, total: null },
      });
    }
  });

  it('stops between two slices once its budget has passed: 422 BUDGET_EXCEEDED, naming the limit', async () => {
    const db = svc.rt.deps.db.lane('analytics');
    await expect(getSummary(db, shop.id, { budgetMs: 0, sliceSize: 5 })).rejects.toMatchObject({
      code: 'BUDGET_EXCEEDED',
      message: expect.stringMatching(/summary time budget/),
    });
  });

  it('stores on each profile the R, F and M scores its label was read from', async () => {
    const { rows } = await svc.rt.deps.db.query<{ rfm_score: number; rfm_segment: string }>(
      'SELECT rfm_score, rfm_segment FROM profiles WHERE workspace_id = $1 AND rfm_segment IS NOT NULL',
      [shop.id],
    );
    const digit = (n: number) => n as RfmScores['r'];
    for (const { rfm_score: s, rfm_segment } of rows) {
      const scores = { r: digit(Math.floor(s / 100)), f: digit(Math.floor(s / 10) % 10), m: digit(s % 10) };
      expect(labelRfmSegment(scores), String(s)).toBe(rfm_segment);
    }
    // Every score occurs: the grid is not one cell.
    expect(new Set(rows.map((r) => Math.floor(r.rfm_score / 100))).size).toBe(5);
  });

  it('agrees with the live scores the intelligence module keeps per profile', async () => {
    const { rows } = await svc.rt.deps.db.query<{ rfm_segment: string; n: number }>(
      `SELECT c.rfm_segment, count(*)::int AS n FROM customer_scores c JOIN profiles p ON p.id = c.profile_id
        WHERE c.workspace_id = $1 AND p.merged_into IS NULL GROUP BY 1`,
      [shop.id],
    );
    const s = await summaryOf(viewer);
    for (const r of rows) expect(s.rfm.segments.find((x) => x.segment === r.rfm_segment)?.profiles).toBe(r.n);
  });

  it('names the current fit', async () => {
    const models = await svc.call('GET', '/intelligence/models', { key: viewer });
    const purchase = (models.body as { data: { kind: string; fit_id: string; name: string }[] }).data.find(
      (m) => m.kind === 'purchase',
    )!;
    const s = await summaryOf(viewer);
    expect(s.current_fit?.fit_id).toBe(purchase.fit_id);
    expect(s.current_fit?.model).toBe(purchase.name);
  });

  it('never counts another workspace’s profiles', async () => {
    const [mine, theirs] = await Promise.all([summaryOf(shop.adminKey), summaryOf(other.adminKey)]);
    expect(theirs.profiles_scored).toBe(150);
    expect(theirs.rfm.grid.flat().reduce((a, b) => a + b, 0)).toBe(150);
    expect(mine.profiles_scored).toBe(399);
  });

  it('answers zeros and nulls for a workspace with no scores', async () => {
    const s = await summaryOf(empty.adminKey);
    expect(s.profiles_scored).toBe(0);
    expect(s.current_fit).toBeNull();
    expect(s.rfm.grid).toEqual(Array.from({ length: 5 }, () => [0, 0, 0, 0, 0]));
    expect(s.rfm.segments.every((x) => x.profiles === 0)).toBe(true);
    expect(s.rfm.segments).toHaveLength(11);
    expect(s.clv.buckets.every((b) => b.profiles === 0)).toBe(true);
    expect(s.churn_risk.buckets.every((b) => b.profiles === 0)).toBe(true);
    expect([s.clv.min, s.clv.max, s.clv.median, s.clv.total]).toEqual([null, null, null, null]);
  });

  it('needs a console scope: no key is 401, an ingest key 403', async () => {
    expect((await svc.call('GET', '/intelligence/summary', { key: null })).status).toBe(401);
    const ingest = await shop.key(['ingest']);
    expect((await svc.call('GET', '/intelligence/summary', { key: ingest })).status).toBe(403);
    expect((await svc.call('GET', '/intelligence/backtests', { key: ingest })).status).toBe(403);
  });
});

describe('GET /intelligence/backtests', () => {
  it('lists the workspace’s back-tests newest first, with their holdout figures, page by page', async () => {
    const run = async (asOf: string) => {
      const r = await svc.call('POST', '/intelligence/models/fit', {
        key: shop.adminKey,
        body: { as_of: asOf, holdout_end: '2026-01-01T00:00:00Z' },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body as {
        data: { fit_id: string; evaluation: { customers: number; actual_purchases: number } };
      };
    };
    const older = await run('2025-06-01T00:00:00Z');
    const newer = await run('2025-08-01T00:00:00Z');

    const first = await svc.call('GET', '/intelligence/backtests?limit=1', { key: viewer });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const page1 = first.body as {
      data: { fit_id: string; as_of: string; holdout: { customers: number; actual_purchases: number } }[];
      pagination: { next_cursor: string | null; has_more: boolean };
    };
    expect(page1.data.map((b) => b.fit_id)).toEqual([newer.data.fit_id]);
    expect(page1.data[0]!.as_of).toBe('2025-08-01T00:00:00.000Z');
    expect(page1.data[0]!.holdout.customers).toBe(newer.data.evaluation.customers);
    expect(page1.data[0]!.holdout.actual_purchases).toBe(newer.data.evaluation.actual_purchases);
    expect(page1.pagination.has_more).toBe(true);

    const second = await svc.call(
      'GET',
      `/intelligence/backtests?limit=1&cursor=${encodeURIComponent(page1.pagination.next_cursor!)}`,
      { key: viewer },
    );
    const page2 = second.body as typeof page1;
    expect(page2.data.map((b) => b.fit_id)).toEqual([older.data.fit_id]);
    expect(page2.pagination.has_more).toBe(false);

    const theirs = await svc.call('GET', '/intelligence/backtests', { key: other.adminKey });
    expect((theirs.body as typeof page1).data).toEqual([]);
    // A back-test is never the current fit the summary names.
    expect((await summaryOf(viewer)).current_fit?.fit_id).not.toBe(newer.data.fit_id);
  });

  it('refuses another workspace’s cursor', async () => {
    const page = await svc.call('GET', '/intelligence/backtests?limit=1', { key: shop.adminKey });
    const cursor = (page.body as { pagination: { next_cursor: string } }).pagination.next_cursor;
    const r = await svc.call('GET', `/intelligence/backtests?cursor=${encodeURIComponent(cursor)}`, {
      key: other.adminKey,
    });
    expect(r.status).toBe(400);
  });
});
