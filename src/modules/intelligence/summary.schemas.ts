import { Type } from 'typebox';
import { Num } from './intelligence.schemas';

// GET /intelligence/summary: the workspace's scores at a glance, counted in SQL.
const Count = (description: string) => Type.Integer({ minimum: 0, description });

export const SummarySchema = Type.Object({
  profiles_scored: Count(
    'Live profiles with scores (a completed order, scored by the current or an earlier fit).',
  ),
  current_fit: Type.Union(
    [
      Type.Object({
        fit_id: Type.String(),
        model: Type.String({ description: 'model.name as profiles show it (`mbg_nbd`, …, `fallback_…`).' }),
        fitted_at: Type.String({ format: 'date-time' }),
        as_of: Type.String({ format: 'date-time' }),
      }),
      Type.Null(),
    ],
    { description: 'The workspace’s current (live) fit; null before the first.' },
  ),
  rfm: Type.Object({
    grid: Type.Array(Type.Array(Count('Profiles in this cell.'), { minItems: 5, maxItems: 5 }), {
      minItems: 5,
      maxItems: 5,
      description:
        'Scored live profiles per (recency score, frequency score): rows R = 5, 4, 3, 2, 1 (most recent first), ' +
        'columns F = 1 … 5.',
    }),
    profiles_gridded: Count(
      'Profiles the grid counts: the scored ones whose R and F scores are stored (a profile scored before ' +
        'they were stored is placed by the next fit).',
    ),
    segments: Type.Array(
      Type.Object({ segment: Type.String(), profiles: Count('Scored live profiles with this rfm_segment.') }),
      { description: 'Every RFM label (docs/intelligence.md), zeros included, in a fixed order.' },
    ),
  }),
  clv: Type.Object({
    buckets: Type.Array(
      Type.Object({
        from: Type.Number({ description: 'Lower edge, included.' }),
        to: Type.Union([Type.Number(), Type.Null()], {
          description: 'Upper edge, excluded; null: no upper edge.',
        }),
        profiles: Count('Scored live profiles whose predicted_clv is in [from, to).'),
      }),
      { description: 'Fixed edges 0, 25, 50, 100, 250, 500, 1000, 2500, 5000 (order currency as stored).' },
    ),
    min: Num('Smallest predicted_clv; null with no scored profile.'),
    max: Num('Largest predicted_clv.'),
    median: Num('Median predicted_clv (interpolated).'),
    total: Num('Σ predicted_clv (currencies are not converted).'),
  }),
  churn_risk: Type.Object({
    buckets: Type.Array(
      Type.Object({
        from: Type.Number(),
        to: Type.Number(),
        profiles: Count(
          'Scored live profiles with churn_risk_score in [from, to) (the last bucket includes 1).',
        ),
      }),
      { description: 'Ten buckets of 0.1.' },
    ),
  }),
});
