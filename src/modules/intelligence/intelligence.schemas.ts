import { Type } from 'typebox';

const Num = (description: string) => Type.Union([Type.Number(), Type.Null()], { description });
const Params = (description: string) => Type.Object({}, { additionalProperties: true, description });

export const ProfileIdParams = Type.Object({
  id: Type.String({ maxLength: 100, description: 'Profile id (a merged-away id reads the survivor).' }),
});

export const ModelRefSchema = Type.Union(
  [
    Type.Object({
      name: Type.String({
        description:
          'The purchase model (`mbg_nbd`, `bg_nbd` or `fallback_empirical_rate`), with `+fallback_mean_spend` ' +
          'when the spend model fell back; any name containing `fallback_` is a fallback (docs/intelligence.md).',
      }),
      fitted_at: Type.String({ format: 'date-time' }),
      as_of: Type.String({ format: 'date-time', description: 'The fit used orders at or before this time.' }),
      params: Type.Object({
        purchase: Params('Purchase model parameters, time in weeks (r, alpha, a, b; or meanGapWeeks).'),
        spend: Params('Spend model parameters (p, q, gamma; or meanOrderValue).'),
      }),
    }),
    Type.Null(),
  ],
  { description: 'The fit the scores came from; null before the workspace’s first fit.' },
);

const scored =
  ' Null while the profile has no completed order (or has not been scored yet, within seconds of its first).';

export const ClvSchema = Type.Object({
  profile_id: Type.String({
    format: 'uuid',
    description: 'The live profile (the survivor of a merged-away id).',
  }),
  predicted_clv: Num(`Expected spend over the next horizon_days, discounted at the workspace rate.${scored}`),
  currency: Type.Union([Type.String(), Type.Null()], {
    description: 'Currency of the profile’s latest order.',
  }),
  horizon_days: Type.Integer(),
  expected_purchases: Num(`Expected purchase days within the horizon.${scored}`),
  expected_order_value: Num(`Expected value of one future purchase day.${scored}`),
  p_alive: Num(`Probability that the customer is still active.${scored}`),
  as_of: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'The moment the scores refer to (a fit’s as_of, or the time of the last rescoring).',
  }),
  model: ModelRefSchema,
});

export const ChurnSchema = Type.Object({
  profile_id: Type.String({ format: 'uuid' }),
  churn_risk_score: Num(`1 − p_alive.${scored}`),
  risk_level: Type.Union([Type.Literal('low'), Type.Literal('medium'), Type.Literal('high'), Type.Null()], {
    description: 'low < 0.3 ≤ medium < threshold ≤ high.',
  }),
  p_alive: Num(`Probability that the customer is still active.${scored}`),
  days_since_last_order: Type.Union([Type.Integer(), Type.Null()], {
    description: 'Whole UTC days from the last purchase day to as_of.',
  }),
  threshold: Type.Number({ description: 'The workspace’s churn threshold (setting churn_threshold).' }),
  as_of: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  model: ModelRefSchema,
});

export const FitBody = Type.Object(
  {
    model: Type.Optional(
      Type.Union([Type.Literal('bg_nbd'), Type.Literal('mbg_nbd')], {
        description: 'Purchase model (default `mbg_nbd`).',
      }),
    ),
    as_of: Type.Optional(
      Type.String({
        format: 'date-time',
        maxLength: 64,
        description:
          'Back-test: fit on completed orders at or before this moment, ages measured to it (UTC days), and ' +
          'score every profile as of it. Default now; not in the future, not before 1970.',
      }),
    ),
  },
  { additionalProperties: false },
);

const FitComponent = {
  model: Type.String(),
  params: Params('Parameters, time in weeks; a fallback’s reason under `reason`.'),
  log_likelihood: Num('Maximised log-likelihood; null for a fallback.'),
  customers: Type.Integer({ description: 'Customers the model was fitted on.' }),
};

export const FitResultSchema = Type.Object({
  ...FitComponent,
  name: Type.String({ description: 'model.name as profiles show it.' }),
  converged: Type.Boolean(),
  fitted_at: Type.String({ format: 'date-time' }),
  as_of: Type.String({ format: 'date-time' }),
  spend: Type.Object(FitComponent),
  rescored: Type.Integer({ description: 'Profiles scored by this fit.' }),
});

export const ModelFitSchema = Type.Object({
  kind: Type.Union([Type.Literal('purchase'), Type.Literal('spend'), Type.Literal('rfm')]),
  ...FitComponent,
  name: Type.String(),
  converged: Type.Boolean(),
  fitted_at: Type.String({ format: 'date-time' }),
  as_of: Type.String({ format: 'date-time' }),
});
