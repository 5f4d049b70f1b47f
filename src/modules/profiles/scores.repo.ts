import type { Queryable } from '../../platform/db';

/**
 * The intelligence module's scores on a profile (`predicted_clv`, `churn_risk_score`,
 * `rfm_segment`): it computes them, this module owns the row. The caller holds the profiles' locks
 * (lockProfiles, the one lock order), so this statement locks nothing new.
 */
export interface ProfileScores {
  profileId: string;
  /** null clears the score (no completed order by the scoring date). */
  predictedClv: number | null;
  churnRiskScore: number | null;
  rfmSegment: string | null;
  /** The R, F and M scores (1–5 each) as R·100 + F·10 + M; null with the segment. */
  rfmScore: number | null;
}

/**
 * Writes the scores that changed (money rounded to cents as the column stores it) and answers the
 * ids of the live profiles whose scores changed: only those need their segments decided again.
 */
export async function storeScores(
  q: Queryable,
  workspaceId: string,
  rows: readonly ProfileScores[],
): Promise<string[]> {
  if (rows.length === 0) return [];
  const { rows: changed } = await q.query<{ id: string }>(
    `UPDATE profiles p
        SET predicted_clv = round(s.clv::numeric, 2), churn_risk_score = s.churn, rfm_segment = s.rfm,
            rfm_score = s.rfm_score, updated_at = now()
       FROM jsonb_to_recordset($2::jsonb) AS s(id uuid, clv float8, churn float8, rfm text, rfm_score smallint)
      WHERE p.id = s.id AND p.workspace_id = $1
        AND (p.predicted_clv IS DISTINCT FROM round(s.clv::numeric, 2)
             OR p.churn_risk_score IS DISTINCT FROM s.churn OR p.rfm_segment IS DISTINCT FROM s.rfm
             OR p.rfm_score IS DISTINCT FROM s.rfm_score)
      RETURNING p.id`,
    [
      workspaceId,
      JSON.stringify(
        rows.map((r) => ({
          id: r.profileId,
          clv: r.predictedClv,
          churn: r.churnRiskScore,
          rfm: r.rfmSegment,
          rfm_score: r.rfmScore,
        })),
      ),
    ],
  );
  return changed.map((r) => r.id);
}

/**
 * Upper edges of the CLV histogram's buckets (order currency, mixed as stored): [0, 25), [25, 50), …,
 * [2500, 5000) and 5000 and more. Fixed, so two workspaces, or one before and after a fit, compare
 * bucket by bucket; docs/intelligence.md, "The workspace at a glance".
 */
export const CLV_BUCKET_EDGES = [25, 50, 100, 250, 500, 1000, 2500, 5000] as const;

export interface ScoreDistributionRows {
  /** Live profiles per (R, F) score; profiles without a stored rfm_score are absent. */
  grid: { r: number; f: number; profiles: number }[];
  segments: { segment: string; profiles: number }[];
  /** Bucket i (0–9) is churn risk in [i/10, (i+1)/10), the last one closed (1 included). */
  churn: { bucket: number; profiles: number }[];
  /** Bucket i (0–8) is below CLV_BUCKET_EDGES[i] and at or above the edge before it. */
  clv: { bucket: number; profiles: number }[];
  stats: {
    scored: number;
    gridded: number;
    clv_min: number | null;
    clv_max: number | null;
    clv_median: number | null;
    clv_total: number | null;
  };
}

/**
 * The distributions of the score columns over a workspace's live profiles, in two statements, each
 * one pass over the workspace's rows (profiles_list_idx's range, or the table scanned for it): the
 * counts per (R, F), per label, per churn bucket and per CLV bucket as four grouping sets of one
 * GROUP BY, then the CLV figures (its median is a sort of the scored values, so it gets its own
 * pass rather than one per grouping set). The caller bounds the time (a statement timeout).
 */
export async function readScoreDistributions(
  q: Queryable,
  workspaceId: string,
): Promise<ScoreDistributionRows> {
  const out = await readCounts(q, workspaceId, '', []);
  const { rows: stats } = await q.query<ScoreDistributionRows['stats']>(
    `SELECT ${STATS},
            (percentile_cont(0.5) WITHIN GROUP (ORDER BY predicted_clv))::float8 AS clv_median
       FROM profiles WHERE workspace_id = $1 AND merged_into IS NULL AND rfm_segment IS NOT NULL`,
    [workspaceId],
  );
  out.stats = stats[0]!;
  return out;
}

/** Live profiles by `seq`: after < seq ≤ upTo, or to the end when upTo is null. */
export interface SeqRange {
  after: number;
  upTo: number | null;
}

/**
 * readScoreDistributions over one range of the workspace's profiles (the embedded database reads a
 * workspace in slices, so that other statements get the connection between two): the same counts,
 * no median, and instead the range's CLV values, from which the caller takes the median of all.
 */
export async function readScoreDistributionSlice(
  q: Queryable,
  workspaceId: string,
  range: SeqRange,
): Promise<{ rows: ScoreDistributionRows; clvValues: number[] }> {
  // The range's two parameters, numbered after the statement's own.
  const inRange = (n: number) => `AND seq > $${n} AND ($${n + 1}::bigint IS NULL OR seq <= $${n + 1})`;
  const params = [range.after, range.upTo];
  const rows = await readCounts(q, workspaceId, inRange(3), params);
  const { rows: stats } = await q.query<ScoreDistributionRows['stats'] & { clv_values: number[] | null }>(
    `SELECT ${STATS}, NULL::float8 AS clv_median,
            array_agg(predicted_clv::float8) FILTER (WHERE predicted_clv IS NOT NULL) AS clv_values
       FROM profiles
      WHERE workspace_id = $1 AND merged_into IS NULL AND rfm_segment IS NOT NULL ${inRange(2)}`,
    [workspaceId, ...params],
  );
  const { clv_values, ...rest } = stats[0]!;
  rows.stats = rest;
  return { rows, clvValues: clv_values ?? [] };
}

const STATS = `count(*)::int AS scored, count(rfm_score)::int AS gridded,
            min(predicted_clv)::float8 AS clv_min, max(predicted_clv)::float8 AS clv_max,
            sum(predicted_clv)::float8 AS clv_total`;

/** The four grouping sets' counts; `extra` narrows the profiles (its parameters from $3 on). */
async function readCounts(
  q: Queryable,
  workspaceId: string,
  extra: string,
  params: unknown[],
): Promise<ScoreDistributionRows> {
  const { rows } = await q.query<{
    r: number | null;
    f: number | null;
    segment: string | null;
    churn: number | null;
    clv: number | null;
    g_rf: number;
    g_segment: number;
    g_churn: number;
    n: number;
  }>(
    `SELECT r, f, segment, churn, clv, GROUPING(r, f)::int AS g_rf, GROUPING(segment)::int AS g_segment,
            GROUPING(churn)::int AS g_churn, count(*)::int AS n
       FROM (SELECT rfm_score / 100 AS r, rfm_score / 10 % 10 AS f, rfm_segment AS segment,
                    least(floor(churn_risk_score * 10)::int, 9) AS churn,
                    width_bucket(predicted_clv, $2::numeric[]) AS clv
               FROM profiles
              WHERE workspace_id = $1 AND merged_into IS NULL AND rfm_segment IS NOT NULL ${extra}) p
      GROUP BY GROUPING SETS ((r, f), (segment), (churn), (clv))`,
    [workspaceId, CLV_BUCKET_EDGES, ...params],
  );
  const out: ScoreDistributionRows = {
    grid: [],
    segments: [],
    churn: [],
    clv: [],
    stats: { scored: 0, gridded: 0, clv_min: null, clv_max: null, clv_median: null, clv_total: null },
  };
  for (const row of rows) {
    if (row.g_rf === 0) {
      if (row.r !== null && row.f !== null) out.grid.push({ r: row.r, f: row.f, profiles: row.n });
    } else if (row.g_segment === 0) {
      if (row.segment !== null) out.segments.push({ segment: row.segment, profiles: row.n });
    } else if (row.g_churn === 0) {
      if (row.churn !== null) out.churn.push({ bucket: row.churn, profiles: row.n });
    } else if (row.clv !== null) out.clv.push({ bucket: row.clv, profiles: row.n });
  }
  return out;
}
