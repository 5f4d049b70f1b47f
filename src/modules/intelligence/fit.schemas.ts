import { Type } from 'typebox';
import { Num, Params } from './intelligence.schemas';

// The schemas of fits and back-tests: the fit request, a fit as read back, a back-test's evaluation.

export const FitBody = Type.Object(
  {
    model: Type.Optional(
      Type.Enum(['bg_nbd', 'mbg_nbd'], {
        description: 'Purchase model: `bg_nbd` or `mbg_nbd` (default `mbg_nbd`).',
      }),
    ),
    as_of: Type.Optional(
      Type.String({
        format: 'date-time',
        maxLength: 64,
        description:
          'A moment more than a minute in the past makes this fit a back-test: fitted on completed orders at or ' +
          'before it, ages measured to it (UTC days), every customer scored as of it under the back-test’s own ' +
          'fit id, and evaluated against the orders after it. A back-test never changes the live scores, never ' +
          'becomes the current fit and sends no webhook. Absent (or within a minute of now): the live fit, as of ' +
          'now. Not in the future, not before 1970.',
      }),
    ),
    holdout_end: Type.Optional(
      Type.String({
        format: 'date-time',
        maxLength: 64,
        description:
          'Back-test only: the holdout is the orders after `as_of` up to this moment (default now). On a later ' +
          'UTC day than `as_of`, not in the future.',
      }),
    ),
  },
  { additionalProperties: false },
);

const StandardErrors = Type.Union([Type.Record(Type.String(), Type.Number()), Type.Null()], {
  description:
    'Standard error of each parameter, from the Hessian of the log-likelihood at the optimum; null for a fallback.',
});

const FitComponent = {
  model: Type.String(),
  params: Params(
    'Parameters, time in weeks; a fallback’s reason under `reason`, and the degenerate fit it replaced under `rejected`.',
  ),
  standard_errors: StandardErrors,
  log_likelihood: Num('Maximised log-likelihood; null for a fallback.'),
  customers: Type.Integer({ description: 'Customers the model was fitted on.' }),
};

const Mean = (description: string) => Type.Union([Type.Number(), Type.Null()], { description });

export const EvaluationSchema = Type.Union(
  [
    Type.Object({
      holdout: Type.Object({
        from: Type.String({
          format: 'date-time',
          description: 'as_of: the holdout is the orders after it …',
        }),
        to: Type.String({ format: 'date-time', description: '… up to holdout_end.' }),
        weeks: Type.Number({ description: 'Whole UTC days from as_of to holdout_end, in weeks.' }),
      }),
      customers: Type.Integer({
        description: 'Customers of the fit (a completed order by as_of), each evaluated.',
      }),
      actual_purchases: Type.Integer({ description: 'Their purchase days in the holdout.' }),
      predicted_purchases: Type.Number({ description: 'Σ of their expected purchase days in the holdout.' }),
      per_customer: Type.Object({
        mean_absolute_error: Mean('Mean |predicted − actual| holdout purchase days per customer.'),
        correlation: Mean(
          'Pearson’s correlation of predicted and actual, per customer; null without variance.',
        ),
      }),
      by_calibration_purchases: Type.Array(
        Type.Object({
          repeat_purchases: Type.String({ description: 'Repeat purchase days by as_of: `0` … `6`, `7+`.' }),
          customers: Type.Integer(),
          actual_mean: Mean('Mean actual holdout purchase days of these customers.'),
          predicted_mean: Mean('Mean predicted holdout purchase days of these customers.'),
        }),
        { description: 'The conditional-expectation table of Fader, Hardie & Lee (2005, Figure 4).' },
      ),
    }),
    Type.Null(),
  ],
  {
    description:
      'A back-test’s holdout evaluation; null for a live fit, and for a back-test still running or failed.',
  },
);

export const FitSchema = Type.Object({
  fit_id: Type.String(),
  backtest: Type.Boolean({ description: 'A back-test: never the live fit, its scores read with `?fit=`.' }),
  ...FitComponent,
  name: Type.String({ description: 'model.name as profiles show it.' }),
  converged: Type.Boolean(),
  fitted_at: Type.String({ format: 'date-time' }),
  as_of: Type.String({ format: 'date-time' }),
  spend: Type.Object(FitComponent),
  evaluation: EvaluationSchema,
});

export const FitResultSchema = Type.Object({
  ...FitSchema.properties,
  rescored: Type.Integer({ description: 'Profiles scored by this fit (under its own id for a back-test).' }),
});

export const ModelFitSchema = Type.Object({
  fit_id: Type.String(),
  kind: Type.Union([Type.Literal('purchase'), Type.Literal('spend'), Type.Literal('rfm')]),
  ...FitComponent,
  name: Type.String(),
  converged: Type.Boolean(),
  fitted_at: Type.String({ format: 'date-time' }),
  as_of: Type.String({ format: 'date-time' }),
});

export const BacktestItemSchema = Type.Object({
  fit_id: Type.String({ description: 'Read it whole with GET /intelligence/models/{fit_id}.' }),
  model: Type.String({ description: 'The purchase model asked for (`mbg_nbd`, `bg_nbd`, or its fallback).' }),
  name: Type.String({ description: 'model.name (with `+fallback_mean_spend` when spend fell back).' }),
  as_of: Type.String({ format: 'date-time', description: 'Fitted on the orders up to this moment.' }),
  holdout_end: Type.String({ format: 'date-time' }),
  created_at: Type.String({ format: 'date-time', description: 'When the back-test started.' }),
  completed_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'Null while it runs, or when its request failed.',
  }),
  holdout: Type.Union(
    [
      Type.Object({
        weeks: Type.Number(),
        customers: Type.Integer(),
        actual_purchases: Type.Integer(),
        predicted_purchases: Type.Number(),
        mean_absolute_error: Mean('Per customer, |predicted − actual| holdout purchase days.'),
        correlation: Mean('Pearson’s correlation of predicted and actual, per customer.'),
      }),
      Type.Null(),
    ],
    { description: 'The evaluation’s summary figures; null until it completed.' },
  ),
});
