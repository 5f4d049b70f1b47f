/**
 * What lets a fit of a million customers run in a minute without holding the event loop: the warm
 * start of large purchase fits, the per-(x, T) scorer, and fits that run as steps. Each must give
 * the same answers as the plain path.
 */
import { describe, expect, it } from 'vitest';
import { createYielder } from '../../../platform/cooperate';
import { CALIBRATION_END, parseCdnow, readCdnowFile } from './cdnow.fixture';
import { createCustomerScorer, scoreCustomer } from './customer-score';
import { simulatePurchases } from './generate';
import { runCooperatively, runToEnd } from './nelder-mead';
import { coarsenPurchaseData, preparePurchaseData } from './purchase-data';
import { fitPurchaseModel, WARM_START_ROWS } from './purchase-fit';
import type { PurchaseModelName } from './purchase-model';
import { type CustomerSummary, summarizeCustomers } from './summaries';
import { createWorkspaceAccumulator, fitWorkspaceModels, fitWorkspaceModelsSteps } from './workspace-models';

const TRUTH = { r: 0.243, alpha: 4.414, a: 0.793, b: 2.426 };

const relative = (a: number, b: number) => Math.abs(a - b) / Math.max(Math.abs(b), 1e-300);

describe('the warm start of a large purchase fit', () => {
  // Ages and purchase times in continuous weeks: (nearly) every customer is a distinct row. The
  // threshold is lowered so that the test stays quick; the product's is WARM_START_ROWS.
  const above = 4_000;
  const ages = Array.from({ length: 10_000 }, (_, i) => 26 + ((i * 7919) % 10_000) / 192);
  const customers = simulatePurchases('bg_nbd', TRUTH, ages, 7);
  const data = preparePurchaseData(customers);

  it('applies to this data, whose week-rounded copy is far smaller', () => {
    expect(data.x.length).toBeGreaterThan(above);
    expect(WARM_START_ROWS).toBeGreaterThan(23_570); // CDNOW master's fit stays the generic one
    expect(coarsenPurchaseData(data).x.length).toBeLessThan(data.x.length / 2);
    expect(coarsenPurchaseData(data).customers).toBe(data.customers);
  });

  for (const model of ['bg_nbd', 'mbg_nbd'] as PurchaseModelName[]) {
    it(`lands on the optimum of the generic fit (${model}), with fewer exact evaluations`, () => {
      const warm = fitPurchaseModel(model, data, { warmStartAbove: above });
      const cold = fitPurchaseModel(model, data, { warmStartAbove: Number.POSITIVE_INFINITY });
      expect(warm.converged && cold.converged).toBe(true);
      expect(relative(warm.logLikelihood, cold.logLikelihood)).toBeLessThan(1e-10);
      for (const k of ['r', 'alpha', 'a', 'b'] as const) {
        expect(relative(warm.params[k], cold.params[k])).toBeLessThan(1e-5);
      }
      expect(warm.evaluations).toBeLessThan(cold.evaluations);
    }, 60_000);
  }
});

describe('the workspace scorer', () => {
  const summaries = [
    ...summarizeCustomers(parseCdnow(readCdnowFile('CDNOW_sample.txt'), 'sample'), CALIBRATION_END).values(),
  ];
  const fallbackData: CustomerSummary[] = summaries.slice(0, 50);
  const settings = { horizonDays: 365, annualDiscountRate: 0.1, churnThreshold: 0.7 };

  for (const [label, rows, model] of [
    ['bg_nbd', summaries, 'bg_nbd'],
    ['mbg_nbd', summaries, 'mbg_nbd'],
    ['the fallbacks', fallbackData, 'mbg_nbd'],
  ] as const) {
    it(`gives scoreCustomer's scores on every CDNOW customer (${label})`, () => {
      const models = fitWorkspaceModels(rows, { model });
      const score = createCustomerScorer(models, settings);
      for (const c of rows) {
        const fast = score(c);
        const plain = scoreCustomer(models, c, settings);
        expect(fast.riskLevel).toBe(plain.riskLevel);
        expect(fast.horizonDays).toBe(plain.horizonDays);
        for (const k of [
          'pAlive',
          'expectedPurchases',
          'expectedOrderValue',
          'predictedClv',
          'churnRiskScore',
        ] as const) {
          expect(Math.abs(fast[k] - plain[k])).toBeLessThanOrEqual(1e-12 * Math.max(1, Math.abs(plain[k])));
        }
      }
    });
  }
});

describe('a workspace fit run as steps', () => {
  it('gives the event loop turns while it runs, and the same models as the plain fit', async () => {
    const summaries = [
      ...summarizeCustomers(
        parseCdnow(readCdnowFile('CDNOW_sample.txt'), 'sample'),
        CALIBRATION_END,
      ).values(),
    ];
    const acc = createWorkspaceAccumulator();
    for (const s of summaries) acc.add(s);
    const data = acc.finish();
    let turns = 0;
    const timer = setInterval(() => turns++, 0);
    try {
      const stepped = await runCooperatively(fitWorkspaceModelsSteps(data), createYielder(2));
      expect(turns).toBeGreaterThan(0);
      expect(stepped).toEqual(runToEnd(fitWorkspaceModelsSteps(data)));
      expect(stepped).toEqual(fitWorkspaceModels(summaries));
    } finally {
      clearInterval(timer);
    }
  });
});
