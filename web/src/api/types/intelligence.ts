export interface ModelRef {
  name: string;
  fitted_at: string;
  as_of: string;
  params: { purchase: Record<string, unknown>; spend: Record<string, unknown> };
}

export interface Clv {
  profile_id: string;
  predicted_clv: number | null;
  currency: string | null;
  horizon_days: number;
  expected_purchases: number | null;
  expected_order_value: number | null;
  p_alive: number | null;
  as_of: string | null;
  model: ModelRef | null;
}

export interface Churn {
  profile_id: string;
  churn_risk_score: number | null;
  risk_level: 'low' | 'medium' | 'high' | null;
  p_alive: number | null;
  days_since_last_order: number | null;
  threshold: number;
  as_of: string | null;
  model: ModelRef | null;
}

export interface ModelComponent {
  fit_id: string;
  kind: 'purchase' | 'spend' | 'rfm';
  model: string;
  params: Record<string, unknown>;
  standard_errors: Record<string, unknown> | null;
  log_likelihood: number | null;
  customers: number;
  name: string;
  converged: boolean;
  fitted_at: string;
  as_of: string;
}

export interface Fit {
  fit_id: string;
  backtest: boolean;
  model: string;
  params: Record<string, unknown>;
  standard_errors: Record<string, unknown> | null;
  log_likelihood: number | null;
  customers: number;
  name: string;
  converged: boolean;
  fitted_at: string;
  as_of: string;
  spend: { model: string; params: Record<string, unknown>; customers: number } | null;
  evaluation: {
    holdout: { from: string; to: string; weeks: number };
    customers: number;
    actual_purchases: number;
    predicted_purchases: number;
    per_customer: { mean_absolute_error: number | null; correlation: number | null };
    by_calibration_purchases: Record<string, unknown>[];
  } | null;
  rescored?: number;
}

/** GET /intelligence/summary. */
export interface IntelligenceSummary {
  profiles_scored: number;
  current_fit: { fit_id: string; model: string; fitted_at: string; as_of: string } | null;
  /** Rows R = 5 … 1, columns F = 1 … 5. */
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

/** An item of GET /intelligence/backtests. */
export interface BacktestItem {
  fit_id: string;
  model: string;
  name: string;
  as_of: string;
  holdout_end: string;
  created_at: string;
  completed_at: string | null;
  holdout: {
    weeks: number;
    customers: number;
    actual_purchases: number;
    predicted_purchases: number;
    mean_absolute_error: number | null;
    correlation: number | null;
  } | null;
}
