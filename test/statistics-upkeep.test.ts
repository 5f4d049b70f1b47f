import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitProcessed } from '../src/modules/processing/processing.test-kit';
import { ENGINE, startTestService, type TestService } from './harness';
import { waitUntil } from './wait';

/**
 * A fresh workspace is planned with statistics soon after its first events, on both engines, with
 * nothing analyzed by hand: PGlite has no autovacuum, and the CI server runs without it. Before the
 * service kept its tables' statistics (src/platform/db/statistics.ts), `event_profiles` and
 * `event_properties` were never analyzed, and a property condition over 200 profiles hashed the
 * whole index per slice: seconds on PostgreSQL, 422 BUDGET_EXCEEDED from about 2,000 profiles on
 * PGlite (docs/decisions.md, "Statistics kept by the service"). How fast it answers now is measured
 * by `npm run bench -- statistics`; this proves the statistics are there and the query answers.
 */
const PROFILES = 200;
let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc?.close());

/** Four events per person: an identify, two tracks with a price, a page view. */
function eventsOf(i: number) {
  const identity = `shopper${i}@example.com`;
  return [
    { identity, event_type: 'identify', event_name: 'identify', payload: { plan: i % 2 ? 'pro' : 'free' } },
    { identity, event_type: 'track', event_name: 'Product Viewed', payload: { price: i, sku: `sku-${i}` } },
    { identity, event_type: 'track', event_name: 'Added to Cart', payload: { price: i * 2, quantity: 1 } },
    { identity, event_type: 'page', event_name: 'home', payload: { path: `/p/${i}` } },
  ];
}

/** pg_class's row count at the last ANALYZE, and how many columns pg_stats describes. */
async function statisticsOf(table: string): Promise<{ reltuples: number; columns: number }> {
  const { rows } = await svc.rt.deps.db.query<{ reltuples: number; columns: number }>(
    `SELECT c.reltuples::float8 AS reltuples,
            (SELECT count(*)::int FROM pg_stats s WHERE s.schemaname = current_schema() AND s.tablename = c.relname) AS columns
       FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace AND c.relname = $1`,
    [table],
  );
  return { reltuples: Number(rows[0]!.reltuples), columns: rows[0]!.columns };
}

describe(`a fresh workspace's statistics (${ENGINE})`, () => {
  it(`are kept by the service: ${PROFILES} profiles × 4 events through the API, then a property condition answers`, async () => {
    const events = Array.from({ length: PROFILES }, (_, i) => eventsOf(i)).flat();
    for (let i = 0; i < events.length; i += 400) {
      const res = await svc.call('POST', '/tenant/ingest/batch', { body: events.slice(i, i + 400) });
      expect(res.status, res.text).toBe(202);
    }
    await waitProcessed(svc.rt.deps.db, 60_000);

    // The tables the pipeline wrote, and the ones segment conditions read, each analyzed since.
    const tables = ['events', 'profiles', 'identity_nodes', 'event_profiles', 'event_properties'];
    const seen: Record<string, unknown> = {};
    await waitUntil(
      async () => {
        for (const t of tables) seen[t] = await statisticsOf(t);
        return tables.every((t) => (seen[t] as { reltuples: number }).reltuples > 0);
      },
      {
        what: 'the statistics check to analyze the tables the pipeline wrote',
        timeoutMs: 30_000,
        detail: () => seen,
      },
    );
    for (const t of ['event_profiles', 'event_properties'])
      expect((await statisticsOf(t)).columns, t).toBeGreaterThan(0);

    const res = await svc.call('POST', '/tenant/segments/calculate', {
      body: {
        query: {
          event: {
            from: '2000-01-01T00:00:00Z',
            to: '2100-01-01T00:00:00Z',
            where: [{ property: 'price', op: 'exists' }],
          },
        },
      },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.count).toBe(PROFILES);
  }, 120_000);
});
