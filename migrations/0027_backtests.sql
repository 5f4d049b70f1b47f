-- Back-tests (src/modules/intelligence/backtest.ts, docs/intelligence.md "Back-testing"): a fit
-- with an `as_of` in the past is kept apart from production. Its three model_fits rows are marked
-- `backtest` and never become the workspace's current fit; its per-profile scores go to
-- backtest_scores under its fit id, never to customer_scores or the profiles' score columns; it
-- writes nothing to the outbox. model_backtests holds its holdout and the evaluation of its
-- predictions against the orders after `as_of`.

ALTER TABLE model_fits ADD COLUMN backtest boolean NOT NULL DEFAULT false;
-- Standard errors of the parameters, from the Hessian of the log-likelihood at the optimum (time in
-- weeks, like the parameters); null for a fallback.
ALTER TABLE model_fits ADD COLUMN standard_errors jsonb;

CREATE TABLE model_backtests (
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  fit_id text NOT NULL,
  -- Orders in (as_of, holdout_end] are the holdout the predictions are held against.
  holdout_end timestamptz NOT NULL,
  -- Null until every customer is scored and evaluated (a back-test whose request failed keeps null).
  evaluation jsonb,
  started_at timestamptz NOT NULL DEFAULT now(),
  completed_at timestamptz,
  PRIMARY KEY (workspace_id, fit_id)
);

-- One row per customer of a back-test (a completed order by its as_of). The profile's key deletes
-- these rows with the profile (erasure); its index serves that delete, the primary key the reads
-- and the paged removal of an old back-test.
CREATE TABLE backtest_scores (
  fit_id text NOT NULL,
  profile_id uuid NOT NULL REFERENCES profiles (id) ON DELETE CASCADE,
  workspace_id uuid NOT NULL,
  p_alive double precision NOT NULL,
  expected_purchases double precision NOT NULL,
  expected_order_value double precision NOT NULL,
  predicted_clv double precision NOT NULL,
  churn_risk_score double precision NOT NULL,
  days_since_last_order integer NOT NULL,
  horizon_days integer NOT NULL,
  currency text NOT NULL,
  rfm_segment text NOT NULL,
  -- Repeat purchase days by as_of (x), and the holdout: expected and actual purchase days after it.
  calibration_purchases integer NOT NULL,
  holdout_predicted double precision NOT NULL,
  holdout_actual integer NOT NULL,
  PRIMARY KEY (fit_id, profile_id)
);

CREATE INDEX backtest_scores_profile_idx ON backtest_scores (profile_id);
