/**
 * Public API of the intelligence models: pure functions, no I/O. See docs/intelligence.md.
 * Time is in weeks throughout (as in the literature); money is in the order currency.
 */
export {
  bgNbd,
  expectedPurchasesBgNbd,
  expectedPurchasesNewBgNbd,
  logLikelihoodBgNbd,
  pAliveBgNbd,
} from './bgnbd';
export { classifyChurnRisk, computeChurnRiskScore, DEFAULT_CHURN_THRESHOLD, type RiskLevel } from './churn';
export { type ClvOptions, computeClv, DEFAULT_ANNUAL_DISCOUNT_RATE, DEFAULT_HORIZON_DAYS } from './clv';
export { type CustomerScore, createCustomerScorer, type ScoreOptions, scoreCustomer } from './customer-score';
export {
  type EmpiricalRateParams,
  explainTooLittleData,
  FALLBACK_PURCHASE_MODEL,
  FALLBACK_SPEND_MODEL,
  type MeanSpendParams,
  MIN_CUSTOMERS_FOR_FIT,
  MIN_REPEAT_BUYERS_FOR_FIT,
} from './fallback';
export {
  expectedOrderValue,
  fitGammaGamma,
  type GammaGammaFit,
  type GammaGammaParams,
  logLikelihoodGammaGamma,
} from './gamma-gamma';
export { type SimulatedCustomer, simulatePurchases } from './generate';
export {
  CALIBRATION_PURCHASE_CENSOR,
  createHoldoutEvaluation,
  createHoldoutPredictor,
  type HoldoutBin,
  type HoldoutEvaluation,
} from './holdout';
export {
  expectedPurchasesMbgNbd,
  expectedPurchasesNewMbgNbd,
  logLikelihoodMbgNbd,
  mbgNbd,
  pAliveMbgNbd,
} from './mbgnbd';
export { type FrequencyRecency, type PurchaseData, preparePurchaseData } from './purchase-data';
export { fitPurchaseModel, type PurchaseFit, selectPurchaseModel } from './purchase-fit';
export type { PurchaseModel, PurchaseModelName, PurchaseParams } from './purchase-model';
export {
  labelRfmSegment,
  RFM_SEGMENT_TABLE,
  RFM_SEGMENTS,
  type RfmInput,
  type RfmScores,
  type RfmSegment,
  scoreRfm,
  segmentCustomers,
  toRfmInput,
} from './rfm';
export {
  type CustomerSummary,
  mergePurchaseDays,
  summarizeCustomer,
  summarizeCustomers,
  type Transaction,
  toUtcDay,
} from './summaries';
export { fitWorkspaceModels, type WorkspaceModels } from './workspace-models';
