/**
 * The pure glue between stored fits and the models (./models): RFM cut points, the fit as used
 * (its rows: fit-rows.ts), and one profile's scores. No I/O.
 */

import {
  type CustomerSummary,
  createCustomerScorer,
  labelRfmSegment,
  type PurchaseModelName,
  type RfmScores,
  type RfmSegment,
  toRfmInput,
  type WorkspaceModels,
} from './models';
import { runToEnd } from './models/nelder-mead';
import {
  createWorkspaceAccumulator,
  fitWorkspaceModelsSteps,
  type WorkspaceFitData,
} from './models/workspace-models';
import type { SummaryRow } from './summaries.repo';

export const RFM_MODEL = 'rfm_quintiles';

/**
 * RFM cut points per dimension (larger is better; recency negated). With n customers, the exact
 * score min(5, 1 + floor(5w/(n − 1))) (models/rfm.ts) is ≥ s exactly when w ≥ k_s = ⌈(s − 1)(n − 1)/5⌉,
 * that is when the value exceeds the k_s-th smallest value. Storing those four values per
 * dimension reproduces the fit-time scores of every customer, and scores a customer rescored between
 * fits against the workspace as it was at the fit, without reading every other customer again.
 */
export interface RfmCuts {
  n: number;
  r: number[];
  f: number[];
  m: number[];
}

/** The four cut points: the k_s-th smallest value, k_s = ⌈(s − 1)(n − 1)/5⌉, s = 2..5. */
const cutRanks = (n: number) => [2, 3, 4, 5].map((s) => Math.ceil(((s - 1) * (n - 1)) / 5));

/** Distinct values a dimension counts before it keeps its values in a column instead. */
const RFM_DISTINCT_LIMIT = 1 << 16;

/**
 * One RFM dimension's values, for its k-th smallest: a count per distinct value, which gives the
 * same k-th smallest value as sorting every customer's value, so cut points and scores are
 * unchanged. Recency and frequency are whole numbers bounded by the workspace's time span and its
 * busiest customer, and spend totals repeat (prices): 1M synthetic customers have 1,633 distinct
 * totals. Past RFM_DISTINCT_LIMIT distinct values (totals in odd cents, say) a count costs more than
 * the value itself, so the dimension goes back to a column of values, 8 bytes a customer.
 */
function createDimension() {
  let counts: Map<number, number> | null = new Map();
  let column = new Float64Array(0);
  let length = 0;
  const push = (v: number, times: number) => {
    if (length + times > column.length) {
      const grown = new Float64Array(Math.max(1024, 2 * (length + times)));
      grown.set(column.subarray(0, length));
      column = grown;
    }
    column.fill(v, length, length + times);
    length += times;
  };
  return {
    add(v: number) {
      if (!counts) return push(v, 1);
      counts.set(v, (counts.get(v) ?? 0) + 1);
      if (counts.size > RFM_DISTINCT_LIMIT) {
        for (const [value, times] of counts) push(value, times);
        counts = null;
      }
    },
    cuts(n: number): number[] {
      if (n <= 1) return [];
      if (!counts) {
        const sorted = column.subarray(0, length).sort();
        return cutRanks(n).map((k) => sorted[k - 1]!);
      }
      const distinct = Float64Array.from(counts.keys()).sort();
      let i = 0;
      let seen = counts.get(distinct[0]!)!; // customers with a value ≤ distinct[i]
      return cutRanks(n).map((k) => {
        while (seen < k) seen += counts!.get(distinct[++i]!)!;
        return distinct[i]!;
      });
    },
  };
}

export function computeRfmCuts(summaries: readonly CustomerSummary[]): RfmCuts {
  const acc = createRfmAccumulator();
  for (const s of summaries) acc.add(s);
  return acc.finish();
}

/**
 * computeRfmCuts one customer at a time (the fit streams a workspace's summaries page by page).
 * Before, the fit kept every customer's three values (24 bytes a customer, up to twice that while a
 * column grew); now a count per distinct value (createDimension).
 */
export function createRfmAccumulator() {
  const r = createDimension();
  const f = createDimension();
  const m = createDimension();
  let n = 0;
  return {
    add(summary: CustomerSummary) {
      const i = toRfmInput(summary);
      r.add(-i.recencyDays);
      f.add(i.frequency);
      m.add(i.monetary);
      n++;
    },
    finish(): RfmCuts {
      return { n, r: r.cuts(n), f: f.cuts(n), m: m.cuts(n) };
    },
  };
}

const scoreBy = (cuts: readonly number[], v: number) => {
  let score = 1;
  for (const c of cuts) if (v > c) score++;
  return score as RfmScores['r'];
};

export function scoreRfmWithCuts(
  cuts: RfmCuts,
  summary: CustomerSummary,
): { scores: RfmScores; segment: RfmSegment } {
  const i = toRfmInput(summary);
  const scores = {
    r: scoreBy(cuts.r, -i.recencyDays),
    f: scoreBy(cuts.f, i.frequency),
    m: scoreBy(cuts.m, i.monetary),
  };
  return { scores, segment: labelRfmSegment(scores) };
}

export const toSummary = (r: SummaryRow): CustomerSummary => ({
  x: r.x,
  tx: r.tx,
  T: r.T,
  zbar: r.zbar,
  totalSpend: r.total_spend,
  daysSinceLast: r.days_since_last,
});

/** A workspace fit as stored and used: the models, the RFM cut points, and where they came from. */
export interface StoredFit {
  fitId: string;
  asOf: Date;
  fittedAt: Date;
  models: WorkspaceModels;
  rfm: RfmCuts;
  /** Customers the spend model could use (x > 0 and z̄ > 0). */
  spendCustomers: number;
}

export function fitModels(
  fitId: string,
  asOf: Date,
  summaries: readonly CustomerSummary[],
  model: PurchaseModelName,
): StoredFit {
  const acc = createFitAccumulator();
  for (const s of summaries) acc.add(s);
  const { data, rfm } = acc.finish();
  return storedFit(fitId, asOf, new Date(), runToEnd(fitWorkspaceModelsSteps(data, { model })), data, rfm);
}

/** What a workspace fit reads from each customer: the models' condensed data and the RFM values. */
export function createFitAccumulator() {
  const models = createWorkspaceAccumulator();
  const rfm = createRfmAccumulator();
  return {
    add(summary: CustomerSummary) {
      models.add(summary);
      rfm.add(summary);
    },
    finish: () => ({ data: models.finish(), rfm: rfm.finish() }),
  };
}

export function storedFit(
  fitId: string,
  asOf: Date,
  fittedAt: Date,
  models: WorkspaceModels,
  data: WorkspaceFitData,
  rfm: RfmCuts,
): StoredFit {
  return { fitId, asOf, fittedAt, models, rfm, spendCustomers: data.spend.customers };
}

export interface ScoreSettings {
  churnThreshold: number;
  discountRate: number;
  horizonDays: number;
}

/**
 * One profile's scores as the score tables store them (customer_scores, and backtest_scores under a
 * back-test): the scorer's figures beside what the summary says of the profile, and the table's own
 * columns (`extra`). One object per profile: a fit's rescoring builds a million of them.
 */
export function toScoreValues<E extends object>(
  row: SummaryRow,
  s: ReturnType<ReturnType<typeof createSummaryScorer>>,
  extra: E,
) {
  return {
    profile_id: row.profile_id,
    p_alive: s.pAlive,
    expected_purchases: s.expectedPurchases,
    expected_order_value: s.expectedOrderValue,
    predicted_clv: s.predictedClv,
    churn_risk_score: s.churnRiskScore,
    days_since_last_order: row.days_since_last,
    horizon_days: s.horizonDays,
    currency: row.currency,
    rfm_segment: s.rfm.segment,
    rfm_score: s.rfm.scores.r * 100 + s.rfm.scores.f * 10 + s.rfm.scores.m,
    ...extra,
  };
}

export function scoreSummary(fit: StoredFit, summary: CustomerSummary, settings: ScoreSettings) {
  return createSummaryScorer(fit, settings)(summary);
}

/**
 * Scores many customers with one fit and settings: the models' scorer remembers the per-(x, T) sums
 * (models/customer-score.ts createCustomerScorer), so a fit's rescoring of a million customers
 * computes them a few thousand times, not a million.
 */
export function createSummaryScorer(fit: StoredFit, settings: ScoreSettings) {
  const score = createCustomerScorer(fit.models, {
    horizonDays: settings.horizonDays,
    annualDiscountRate: settings.discountRate,
    churnThreshold: settings.churnThreshold,
  });
  return (summary: CustomerSummary) => ({ ...score(summary), rfm: scoreRfmWithCuts(fit.rfm, summary) });
}
