import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService, type TestWorkspace } from '../../../test/harness';
import { loadOrders } from './intelligence.test-kit';
import { type CustomerSummary, segmentCustomers, summarizeCustomers, type Transaction } from './models';
import { computeRfmCuts, scoreRfmWithCuts, toSummary } from './scoring';
import { readProfileSummaries, readWorkspaceSummaries } from './summaries.repo';

/**
 * The SQL summaries are held to the pure reference (models/summaries.ts) on random order histories:
 * same-day merging by UTC day (times of day included, midnight edges too), orders after as_of left
 * out, x, t_x, T, z̄, total spend and days since the last purchase day.
 */
let svc: TestService;
let ws: TestWorkspace;
beforeAll(async () => {
  svc = await startTestService();
  ws = await svc.newWorkspace('summaries');
}, 30_000);
afterAll(async () => svc?.close());

const START = Date.UTC(2024, 0, 1);
const SPAN = 90 * 86_400_000;
const moment = fc.oneof(
  fc.integer({ min: START, max: START + SPAN }),
  // Exactly midnight, and one millisecond either side of it.
  fc
    .tuple(fc.integer({ min: 0, max: 90 }), fc.constantFrom(-1, 0, 1))
    .map(([d, e]) => START + d * 86_400_000 + e),
);
const transaction = fc.record({
  at: moment.map((ms) => new Date(ms)),
  amount: fc.integer({ min: 0, max: 100_000 }).map((cents) => cents / 100),
});
const histories = fc.array(fc.array(transaction, { minLength: 1, maxLength: 6 }), {
  minLength: 1,
  maxLength: 8,
});

function expectSame(actual: CustomerSummary, expected: CustomerSummary) {
  expect(actual.x).toBe(expected.x);
  expect(actual.daysSinceLast).toBe(expected.daysSinceLast);
  for (const k of ['tx', 'T', 'zbar', 'totalSpend'] as const) expect(actual[k]).toBeCloseTo(expected[k], 8);
}

describe('customer summaries in SQL', () => {
  it('equal the pure summarizeCustomers on random histories, for the workspace and for chosen profiles', async () => {
    await fc.assert(
      fc.asyncProperty(histories, moment, async (list, asOfMs) => {
        const db = svc.rt.deps.db;
        await db.query('DELETE FROM orders WHERE workspace_id = $1', [ws.id]);
        await db.query('DELETE FROM profiles WHERE workspace_id = $1', [ws.id]);
        const byCustomer = new Map<number, Transaction[]>(list.map((txs, i) => [i, txs]));
        const ids = await loadOrders(db, ws.id, byCustomer);
        const asOf = new Date(asOfMs);
        const expected = summarizeCustomers(byCustomer, asOf);
        const rows = await readWorkspaceSummaries(db, ws.id, asOf);
        expect(rows.length).toBe(expected.size);
        // Read three customers per statement, the workspace comes out the same.
        expect(await readWorkspaceSummaries(db, ws.id, asOf, 3)).toEqual(rows);
        const byProfile = new Map(rows.map((r) => [r.profile_id, toSummary(r)]));
        for (const [key, summary] of expected) expectSame(byProfile.get(ids.get(key)!)!, summary);
        const some = [...ids.values()].slice(0, 2);
        const chosen = await readProfileSummaries(db, ws.id, asOf, some);
        for (const r of chosen) expectSame(toSummary(r), byProfile.get(r.profile_id)!);
        expect(chosen.length).toBe(some.filter((id) => byProfile.has(id)).length);
      }),
      { numRuns: 40 },
    );
  }, 60_000);
});

describe('RFM cut points', () => {
  const summary = fc.record({
    x: fc.integer({ min: 0, max: 5 }),
    tx: fc.constant(0),
    T: fc.constant(0),
    zbar: fc.constant(0),
    totalSpend: fc.integer({ min: 0, max: 20 }).map((v) => v * 5),
    daysSinceLast: fc.integer({ min: 0, max: 30 }),
  });
  it('give every customer of the fit the exact quintile scores and segment of segmentCustomers', () => {
    fc.assert(
      fc.property(fc.array(summary, { minLength: 1, maxLength: 60 }), (customers) => {
        const cuts = computeRfmCuts(customers);
        const exact = segmentCustomers(customers);
        customers.forEach((c, i) => {
          expect(scoreRfmWithCuts(cuts, c)).toEqual(exact[i]);
        });
      }),
      { numRuns: 300 },
    );
  });
});
