/**
 * Intelligence (issue 9), the pure models on CDNOW master (23,570 customers, 39-week calibration):
 * parse, summaries, the default fit (MBG/NBD + Gamma-Gamma) and scoring every customer, in this
 * process. The ceiling is one evaluation of the BG/NBD log-likelihood over the same customers,
 * measured in the same run: a fit is a few hundred of those, so the ratio (evaluations per fit)
 * tells the optimizer's cost apart from the machine's speed. Target: a fit ≤ 2 s (issue 9).
 *
 * Still to come with the product wiring: the fit + score of a synthetic 1M-customer workspace on
 * PostgreSQL and the order-to-score lag under load.
 */

import { logLikelihoodBgNbd } from '../src/modules/intelligence/models/bgnbd';
import { CALIBRATION_END, parseCdnow, readCdnowFile } from '../src/modules/intelligence/models/cdnow.fixture';
import { preparePurchaseData } from '../src/modules/intelligence/models/purchase-data';
import { fitPurchaseModel } from '../src/modules/intelligence/models/purchase-fit';
import { summarizeCustomers } from '../src/modules/intelligence/models/summaries';
import { fitWorkspaceModels, scoreCustomer } from '../src/modules/intelligence/models/workspace-models';
import { note, report } from './lib';

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
}
