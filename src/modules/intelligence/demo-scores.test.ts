import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../../../test/harness';
import { loadDemoDataset } from '../demo/demo.service';
import { waitProcessed } from '../processing/processing.test-kit';
import { waitRescored } from './intelligence.test-kit';
import { RFM_SEGMENTS } from './models';

/**
 * The demo workspace (`cdp demo`) as an analyst opens it: every customer with a completed order
 * carries an RFM label, a CLV and a churn risk, the others none, and the labels mean what they say.
 */
// The documented labels (docs/intelligence.md), as the RFM table defines them.
const LABELS: readonly (string | null)[] = RFM_SEGMENTS;

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
}, 60_000);
afterAll(async () => svc?.close());

interface Row {
  buyer: boolean;
  rfm_segment: string | null;
  predicted_clv: number | null;
  churn_risk_score: number | null;
}

describe('the demo workspace after its fit', () => {
  it('shows sensible RFM, CLV and churn on every customer who bought, and nothing on the others', async () => {
    const ws = await svc.newWorkspace('demo-scores');
    await loadDemoDataset(svc.rt.deps.db, ws.id, { seed: 11, customers: 400, now: new Date() });
    await waitProcessed(svc.rt.deps.db, 60_000);
    const fit = await svc.call('POST', '/intelligence/models/fit', { key: ws.adminKey, body: {} });
    expect(fit.status, fit.text).toBe(200);
    await waitRescored(svc.rt.deps.db, 30_000);

    const { rows } = await svc.rt.deps.db.query<Row>(
      `SELECT EXISTS (SELECT 1 FROM orders o WHERE o.profile_id = p.id AND o.status = 'completed') AS buyer,
              p.rfm_segment, p.predicted_clv::float8 AS predicted_clv, p.churn_risk_score
         FROM profiles p WHERE p.workspace_id = $1 AND p.merged_into IS NULL`,
      [ws.id],
    );
    const buyers = rows.filter((r) => r.buyer);
    expect(buyers.length).toBeGreaterThan(100);
    for (const r of buyers) {
      expect(LABELS).toContain(r.rfm_segment);
      expect(r.predicted_clv).toBeGreaterThanOrEqual(0);
      expect(Number.isFinite(r.predicted_clv)).toBe(true);
      expect(r.churn_risk_score).toBeGreaterThanOrEqual(0);
      expect(r.churn_risk_score).toBeLessThanOrEqual(1);
    }
    for (const r of rows.filter((x) => !x.buyer)) {
      expect([r.rfm_segment, r.predicted_clv, r.churn_risk_score]).toEqual([null, null, null]);
    }
    expect(new Set(buyers.map((r) => r.rfm_segment)).size).toBeGreaterThanOrEqual(6);

    // The labels agree with the model: champions are likelier to be alive, and worth more, than lost.
    const mean = (label: string, f: (r: Row) => number) => {
      const of = buyers.filter((r) => r.rfm_segment === label);
      return of.reduce((s, r) => s + f(r), 0) / of.length;
    };
    expect(mean('champions', (r) => r.churn_risk_score!)).toBeLessThan(
      mean('lost', (r) => r.churn_risk_score!),
    );
    expect(mean('champions', (r) => r.predicted_clv!)).toBeGreaterThan(mean('lost', (r) => r.predicted_clv!));
  }, 120_000);
});
