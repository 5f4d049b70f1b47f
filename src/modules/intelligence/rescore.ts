import type { Queryable } from '../../platform/db';
import { type OutboxFact, writeOutboxMany } from '../outbox';
import { lockProfileKeys, storeScores } from '../profiles';
import { markProfilesForRefresh } from '../segments';
import * as repo from './intelligence.repo';
import { createSummaryScorer, type ScoreSettings, type StoredFit, toSummary } from './scoring';
import { readProfileSummaries, readSummaryRange } from './summaries.repo';

export interface RescoreOptions {
  /** A scorer of this fit and settings kept across calls (it remembers per-(x, T) sums). */
  score?: ReturnType<typeof createSummaryScorer>;
  /**
   * The ids are every customer in this id range (the fit's pages): their summaries are read as one
   * index range instead of one probe per id; rows of profiles not locked here are dropped.
   */
  range?: { after: string; last: string };
}

/**
 * Rescoring a set of profiles with a stored fit, in the caller's transaction, which must hold the
 * workspace's score lock (repo.lockWorkspaceScores) so that a fit's chunks and the per-order
 * rescoring never interleave. The profiles are locked here in the one lock order (lockProfileKeys:
 * the lock, reading only what tells a live profile of this workspace);
 * their summaries are read after that, so they include every order committed before the lock.
 *
 * - a live profile with completed orders by asOf: its scores stored (customer_scores and the three
 *   columns of profiles);
 * - a live profile without: scores cleared (a back-test before its first order);
 * - a profile merged away or erased: its score row deleted (reads follow to the survivor).
 *
 * churn.risk_escalated is written when a score reaches the threshold while no escalation stands;
 * the escalation stands until a score falls below the threshold, so the fact fires once per
 * upward crossing. Profiles whose stored scores changed are marked for their segments.
 */
export async function rescoreProfiles(
  tx: Queryable,
  workspaceId: string,
  fit: StoredFit,
  profileIds: readonly string[],
  asOf: Date,
  settings: ScoreSettings,
  options: RescoreOptions = {},
): Promise<{ scored: number; escalated: number }> {
  if (profileIds.length === 0) return { scored: 0, escalated: 0 };
  const { rows } = await lockProfileKeys(tx, profileIds);
  const live = rows.filter((r) => r.merged_into === null && r.workspace_id === workspaceId).map((r) => r.id);
  const liveSet = new Set(live);
  await repo.deleteScores(
    tx,
    workspaceId,
    profileIds.filter((id) => !liveSet.has(id)),
  );
  const summaries = options.range
    ? (await readSummaryRange(tx, workspaceId, asOf, options.range.after, options.range.last)).filter((r) =>
        liveSet.has(r.profile_id),
      )
    : await readProfileSummaries(tx, workspaceId, asOf, live);
  const score = options.score ?? createSummaryScorer(fit, settings);
  const standing = await repo.readEscalated(tx, workspaceId, live);
  const scores: repo.ScoreValues[] = [];
  const facts: OutboxFact[] = [];
  for (const row of summaries) {
    const s = score(toSummary(row));
    const high = s.churnRiskScore >= settings.churnThreshold;
    if (high && !standing.has(row.profile_id)) {
      facts.push({
        workspaceId,
        type: 'churn.risk_escalated',
        data: {
          profile_id: row.profile_id,
          churn_risk_score: s.churnRiskScore,
          threshold: settings.churnThreshold,
          p_alive: s.pAlive,
          days_since_last_order: row.days_since_last,
          model: fit.models.name,
        },
      });
    }
    scores.push({
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
      escalated: high,
    });
  }
  const scoredIds = new Set(scores.map((s) => s.profile_id));
  const unscored = live.filter((id) => !scoredIds.has(id));
  await repo.upsertScores(tx, workspaceId, { fitId: fit.fitId, asOf }, scores);
  await repo.deleteScores(tx, workspaceId, unscored);
  const changed = await storeScores(tx, workspaceId, [
    ...scores.map((s) => ({
      profileId: s.profile_id,
      predictedClv: s.predicted_clv,
      churnRiskScore: s.churn_risk_score,
      rfmSegment: s.rfm_segment,
    })),
    ...unscored.map((profileId) => ({
      profileId,
      predictedClv: null,
      churnRiskScore: null,
      rfmSegment: null,
    })),
  ]);
  if (changed.length > 0) await markProfilesForRefresh(tx, workspaceId, changed);
  await writeOutboxMany(tx, facts);
  return { scored: scores.length, escalated: facts.length };
}
