import { Type } from 'typebox';

export const Num = (description: string) => Type.Union([Type.Number(), Type.Null()], { description });
export const Params = (description: string) => Type.Object({}, { additionalProperties: true, description });

export const ProfileIdParams = Type.Object({
  id: Type.String({ maxLength: 100, description: 'Profile id (a merged-away id reads the survivor).' }),
});

export const FitIdParams = Type.Object({
  fit_id: Type.String({ maxLength: 100, description: 'A fit id (`fit_…`), live or back-test.' }),
});

export const ScoreQuery = Type.Object(
  {
    fit: Type.Optional(
      Type.String({
        maxLength: 100,
        description:
          'A back-test’s fit id: read the profile’s scores under that back-test instead of the live ones ' +
          '(404 when no back-test of the workspace has this id).',
      }),
    ),
  },
  { additionalProperties: false },
);

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
    description:
      'The moment the scores refer to (the time of the last rescoring, or a back-test’s as_of under `fit`).',
  }),
  model: ModelRefSchema,
  holdout: Type.Optional(
    Type.Union(
      [
        Type.Object({
          predicted: Type.Number({ description: 'Expected purchase days in the back-test’s holdout.' }),
          actual: Type.Integer({ description: 'Purchase days the profile made in the holdout.' }),
        }),
        Type.Null(),
      ],
      {
        description:
          'Under `fit` only: the back-test’s holdout for this profile; null when it was not scored.',
      },
    ),
  ),
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
