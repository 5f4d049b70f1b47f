-- Predictive intelligence (src/modules/intelligence): fitted models, each profile's latest scores,
-- and the bookkeeping that rescores a profile within seconds of its order and refits a workspace as
-- its orders accumulate. The intelligence module owns every table here; the scores a segment query
-- reads (`predicted_clv`, `churn_risk_score`, `rfm_segment`) are copied onto `profiles` through the
-- profiles module.

-- Every fit, kept as history. One fit writes three rows under one fit_id: the purchase model
-- (bg_nbd, mbg_nbd or the fallback), the spend model (gamma_gamma or its fallback) and the RFM
-- quintile cut points. The current fit of a workspace is its greatest fit_id (ids sort by time).
CREATE TABLE model_fits (
  fit_id text NOT NULL,
  kind text NOT NULL CHECK (kind IN ('purchase', 'spend', 'rfm')),
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  -- This component's model (`bg_nbd`, `fallback_mean_spend`, `rfm_quintiles`, …).
  model text NOT NULL,
  -- What a profile shows as model.name: the purchase model, `+fallback_mean_spend` when spend fell back.
  name text NOT NULL,
  -- Parameters with time in weeks, as in the literature; a fallback's reason under "reason".
  params jsonb NOT NULL,
  log_likelihood double precision,
  customers integer NOT NULL,
  -- Orders at or before as_of were used; ages were measured to it.
  as_of timestamptz NOT NULL,
  fitted_at timestamptz NOT NULL DEFAULT now(),
  converged boolean NOT NULL,
  PRIMARY KEY (workspace_id, fit_id, kind)
);

-- The latest scores of each profile with orders, with what the API shows beside them. Deleting a
-- profile (erasure) deletes its scores with it.
CREATE TABLE customer_scores (
  profile_id uuid PRIMARY KEY REFERENCES profiles (id) ON DELETE CASCADE,
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  fit_id text NOT NULL,
  as_of timestamptz NOT NULL,
  p_alive double precision NOT NULL,
  expected_purchases double precision NOT NULL,
  expected_order_value double precision NOT NULL,
  predicted_clv double precision NOT NULL,
  churn_risk_score double precision NOT NULL,
  days_since_last_order integer NOT NULL,
  horizon_days integer NOT NULL,
  currency text NOT NULL,
  rfm_segment text NOT NULL,
  -- True from the moment churn.risk_escalated was sent until the score falls below the threshold:
  -- the fact fires once per upward crossing, not once per rescore.
  escalated boolean NOT NULL DEFAULT false,
  scored_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX customer_scores_workspace_idx ON customer_scores (workspace_id);

-- Profiles whose orders changed since they were last scored (the pipeline step marks them, the
-- intelligence.score job drains them). Small and short-lived; no foreign key, like the segments'
-- dirty list: a mark for a profile that is gone is simply skipped.
CREATE TABLE intelligence_dirty_profiles (
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  profile_id uuid NOT NULL,
  PRIMARY KEY (workspace_id, profile_id)
);

-- Per workspace: how many profiles were rescored for new orders since the last fit, and how many
-- customers that fit saw. Written only by the (per-workspace, serialized) jobs, never by the
-- pipeline, so it is no hot row for event processing.
CREATE TABLE intelligence_state (
  workspace_id uuid PRIMARY KEY REFERENCES workspaces (id) ON DELETE CASCADE,
  changed_since_fit integer NOT NULL DEFAULT 0,
  customers_at_fit integer NOT NULL DEFAULT 0
);
