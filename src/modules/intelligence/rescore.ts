import { BACKGROUND_SLICE_MS, createYielder } from '../../platform/cooperate';
import type { Queryable } from '../../platform/db';
import { type OutboxFact, writeOutboxMany } from '../outbox';
import { getProfileSummaries, lockProfileKeys, storeScores } from '../profiles';
import { markProfilesForRefresh } from '../segments';
import * as repo from './intelligence.repo';
import { createSummaryScorer, type ScoreSettings, type StoredFit, toScoreValues, toSummary } from './scoring';
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
  // Read before upsertScores replaces them: an escalation says what the score was.
  const before = new Map<string, number>();
  const scores: repo.ScoreValues[] = [];
  const facts: OutboxFact[] = [];
  // A fit's page is 10,000 customers, ≈ 200 ms of scoring on a busy machine: run in one go it held
  // the event loop, and every other workspace's requests, that long (bench/neighbour.bench.ts).
  const yieldNow = createYielder(BACKGROUND_SLICE_MS);
  for (const row of summaries) {
    if (yieldNow.due()) await yieldNow();
    const s = score(toSummary(row));
    const high = s.churnRiskScore >= settings.churnThreshold;
    if (high && !standing.has(row.profile_id)) {
      facts.push({
        workspaceId,
        type: 'churn.risk_escalated',
        data: {
          profile_id: row.profile_id,
          churn_risk_score: s.churnRiskScore,
          previous_churn_risk_score: null,
          threshold: settings.churnThreshold,
          p_alive: s.pAlive,
          days_since_last_order: row.days_since_last,
          model: fit.models.name,
          fit_id: fit.fitId,
          as_of: asOf.toISOString(),
          profile: null,
        },
      });
    }
    scores.push(toScoreValues(row, s, { escalated: high }));
  }
  const escalating = facts.map((f) => f.data.profile_id as string);
  for (const [id, score] of await repo.readChurnScores(tx, workspaceId, escalating)) before.set(id, score);
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
      rfmScore: s.rfm_score ?? null,
    })),
    ...unscored.map((profileId) => ({
      profileId,
      predictedClv: null,
      churnRiskScore: null,
      rfmSegment: null,
      rfmScore: null,
    })),
  ]);
  if (changed.length > 0) await markProfilesForRefresh(tx, workspaceId, changed);
  await writeOutboxMany(tx, await withWhoAndBefore(tx, workspaceId, facts, before));
  return { scored: scores.length, escalated: facts.length };
}

/**
 * Completes the escalation facts (rare: one per upward crossing) with the score each profile held
 * before and who the profile is, read only when there are any.
 */
async function withWhoAndBefore(
  tx: Queryable,
  workspaceId: string,
  facts: OutboxFact[],
  before: ReadonlyMap<string, number>,
): Promise<OutboxFact[]> {
  if (facts.length === 0) return facts;
  const who = await getProfileSummaries(
    tx,
    workspaceId,
    facts.map((f) => f.data.profile_id as string),
  );
  return facts.map((f) => {
    const id = f.data.profile_id as string;
    return {
      ...f,
      data: { ...f.data, previous_churn_risk_score: before.get(id) ?? null, profile: who.get(id) ?? null },
    };
  });
}
