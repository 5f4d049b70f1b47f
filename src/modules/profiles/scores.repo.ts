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
            updated_at = now()
       FROM jsonb_to_recordset($2::jsonb) AS s(id uuid, clv float8, churn float8, rfm text)
      WHERE p.id = s.id AND p.workspace_id = $1
        AND (p.predicted_clv IS DISTINCT FROM round(s.clv::numeric, 2)
             OR p.churn_risk_score IS DISTINCT FROM s.churn OR p.rfm_segment IS DISTINCT FROM s.rfm)
      RETURNING p.id`,
    [
      workspaceId,
      JSON.stringify(
        rows.map((r) => ({
          id: r.profileId,
          clv: r.predictedClv,
          churn: r.churnRiskScore,
          rfm: r.rfmSegment,
        })),
      ),
    ],
  );
  return changed.map((r) => r.id);
}
