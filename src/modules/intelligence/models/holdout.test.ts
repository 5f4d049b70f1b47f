import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CALIBRATION_END, HOLDOUT_END, parseCdnow, readCdnowFile } from './cdnow.fixture';
import { createHoldoutEvaluation, createHoldoutPredictor } from './holdout';
import { selectPurchaseModel } from './purchase-fit';
import { mergePurchaseDays, summarizeCustomers } from './summaries';
import { fitWorkspaceModels } from './workspace-models';

describe('the holdout evaluation', () => {
  it('agrees with a two-pass computation of totals, MAE, correlation and the bins', () => {
    const row = fc.record({
      x: fc.integer({ min: 0, max: 12 }),
      predicted: fc.double({ min: 0, max: 20, noNaN: true }),
      actual: fc.integer({ min: 0, max: 20 }),
    });
    fc.assert(
      fc.property(fc.array(row, { minLength: 2, maxLength: 200 }), (rows) => {
        const e = createHoldoutEvaluation();
        for (const r of rows) e.add(r.x, r.predicted, r.actual);
        const out = e.finish();
        const n = rows.length;
        const mp = rows.reduce((s, r) => s + r.predicted, 0) / n;
        const ma = rows.reduce((s, r) => s + r.actual, 0) / n;
        let spa = 0;
        let spp = 0;
        let saa = 0;
        for (const r of rows) {
          spa += (r.predicted - mp) * (r.actual - ma);
          spp += (r.predicted - mp) ** 2;
          saa += (r.actual - ma) ** 2;
        }
        expect(out.customers).toBe(n);
        expect(out.actualPurchases).toBe(rows.reduce((s, r) => s + r.actual, 0));
        expect(out.predictedPurchases).toBeCloseTo(mp * n, 9);
        expect(out.meanAbsoluteError).toBeCloseTo(
          rows.reduce((s, r) => s + Math.abs(r.predicted - r.actual), 0) / n,
          9,
        );
        if (spp > 1e-9 && saa > 0) expect(out.correlation).toBeCloseTo(spa / Math.sqrt(spp * saa), 6);
        const sevenPlus = rows.filter((r) => r.x >= 7);
        const last = out.byCalibrationPurchases[7]!;
        expect(last.repeatPurchases).toBe('7+');
        expect(last.customers).toBe(sevenPlus.length);
        if (sevenPlus.length > 0) {
          expect(last.actualMean).toBeCloseTo(
            sevenPlus.reduce((s, r) => s + r.actual, 0) / sevenPlus.length,
            9,
          );
        } else {
          expect(last.actualMean).toBeNull();
        }
      }),
    );
  });

  it('gives a perfect forecast no error and a correlation of 1; nothing to correlate gives null', () => {
    const e = createHoldoutEvaluation();
    for (const [x, a] of [
      [0, 0],
      [1, 2],
      [3, 5],
    ] as const)
      e.add(x, a, a);
    expect(e.finish()).toMatchObject({ meanAbsoluteError: 0, correlation: 1 });
    const flat = createHoldoutEvaluation();
    flat.add(0, 0.5, 0);
    flat.add(1, 0.7, 0);
    expect(flat.finish().correlation).toBeNull();
    expect(createHoldoutEvaluation().finish()).toMatchObject({ customers: 0, meanAbsoluteError: null });
  });
});

describe('the holdout predictor', () => {
  const transactions = parseCdnow(readCdnowFile('CDNOW_sample.txt'), 'sample');
  const summaries = [...summarizeCustomers(transactions, CALIBRATION_END).values()];

  for (const model of ['bg_nbd', 'mbg_nbd'] as const) {
    it(`is the model's conditional expectation (${model}), and gives CDNOW's conditional-expectation table`, () => {
      const models = fitWorkspaceModels(summaries, { model });
      expect(models.purchase.name).toBe(model);
      const predict = createHoldoutPredictor(models, 39);
      const e = createHoldoutEvaluation();
      let i = 0;
      for (const [key, s] of summarizeCustomers(transactions, CALIBRATION_END)) {
        const p = predict(s);
        if (i++ % 97 === 0) {
          expect(p).toBeCloseTo(
            selectPurchaseModel(model).expectedPurchases(models.purchase.params as never, 39, s),
            12,
          );
        }
        const list = transactions.get(key)!;
        e.add(
          s.x,
          p,
          mergePurchaseDays(list, HOLDOUT_END).length - mergePurchaseDays(list, CALIBRATION_END).length,
        );
      }
      const out = e.finish();
      console.log(
        `${model} CDNOW conditional expectations (weeks 40–78 by repeat purchases in weeks 1–39):\n` +
          out.byCalibrationPurchases
            .map(
              (b) =>
                `  ${b.repeatPurchases}: n ${b.customers}, actual ${b.actualMean!.toFixed(3)}, predicted ${b.predictedMean!.toFixed(3)}`,
            )
            .join('\n') +
          `\n  total actual ${out.actualPurchases}, predicted ${out.predictedPurchases.toFixed(1)}, MAE ${out.meanAbsoluteError!.toFixed(4)}, r ${out.correlation!.toFixed(4)}`,
      );
      expect(out.actualPurchases).toBe(1882);
      expect(out.byCalibrationPurchases.map((b) => b.customers)).toEqual([
        1411, 439, 214, 100, 62, 38, 29, 64,
      ]);
    });
  }

  it('uses the fallback’s expectation when the workspace fell back', () => {
    const models = fitWorkspaceModels(summaries.slice(0, 50));
    const predict = createHoldoutPredictor(models, 39);
    expect(predict({ x: 2, tx: 30, T: 38 })).toBeGreaterThan(0);
  });
});
