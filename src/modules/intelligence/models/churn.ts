/**
 * churn_risk_score = 1 − P(alive) (docs/intelligence.md), and the risk level shown beside it.
 *
 * | risk_level | churn_risk_score          |
 * |------------|---------------------------|
 * | low        | < 0.3                     |
 * | medium     | 0.3 ≤ score < threshold   |
 * | high       | ≥ threshold (default 0.7) |
 *
 * The high band starts at the workspace threshold, so "high" always means "would fire
 * churn.risk_escalated". When the threshold is set below 0.3, medium is empty.
 */

export type RiskLevel = 'low' | 'medium' | 'high';

export const DEFAULT_CHURN_THRESHOLD = 0.7;
export const MEDIUM_RISK_FROM = 0.3;

/** 1 − P(alive), clamped to [0, 1] against rounding. */
export function computeChurnRiskScore(pAlive: number): number {
  if (Number.isNaN(pAlive)) return Number.NaN;
  return Math.min(1, Math.max(0, 1 - pAlive));
}

export function classifyChurnRisk(score: number, threshold = DEFAULT_CHURN_THRESHOLD): RiskLevel {
  if (score >= threshold) return 'high';
  if (score >= Math.min(MEDIUM_RISK_FROM, threshold)) return 'medium';
  return 'low';
}
