import type { Db } from '../../platform/db';
import { iso } from '../../platform/http/envelope';
import type { DataSubject, PersonalDataOwner } from '../../platform/personal-data';
import { backtestScoresOf, deleteBacktestScoresOf } from './backtests.repo';
import { deleteScores, readScore } from './intelligence.repo';
import { clearDirty } from './rescoring.repo';

/**
 * A person's predictions: the live scores (also copied onto the profile row), every back-test's
 * scores of them, and a pending rescoring mark. Fits and their evaluations are workspace-wide
 * numbers that name nobody.
 */

/** Dates as ISO strings, everything else as stored. */
const plain = (r: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(r).map(([k, v]) => [k, v instanceof Date ? iso(v) : v]));

async function* scoresOf(db: Db, s: DataSubject): AsyncIterable<unknown> {
  for (const id of s.profileIds) {
    const score = await readScore(db, s.workspaceId, id);
    if (score) yield { kind: 'live', ...plain(score as unknown as Record<string, unknown>) };
  }
  for (const r of await backtestScoresOf(db, s.workspaceId, s.profileIds))
    yield { kind: 'backtest', ...plain(r) };
}

export const intelligencePersonalData: PersonalDataOwner = {
  module: 'intelligence',
  tables: [
    {
      table: 'customer_scores',
      holds: "a profile's current predictions (p_alive, CLV, churn risk, RFM)",
      kept: { as: 'until the next rescoring replaces them' },
      exported: { section: 'scores' },
    },
    {
      table: 'backtest_scores',
      holds: "a profile's predictions in each back-test, beside what happened in its holdout",
      kept: { as: 'as long as the back-test' },
      exported: { section: 'scores' },
    },
    {
      table: 'intelligence_dirty_profiles',
      holds: 'profile ids waiting to be rescored',
      kept: { as: 'until the next rescoring (seconds)' },
      exported: { not: 'a work list of ids, nothing about the person' },
    },
  ],
  async erase(tx, s) {
    await clearDirty(tx, s.workspaceId, s.profileIds);
    const backtest = await deleteBacktestScoresOf(tx, s.workspaceId, s.profileIds);
    await deleteScores(tx, s.workspaceId, s.profileIds);
    return { backtest_scores: backtest };
  },
  sections: [{ name: 'scores', rows: scoresOf }],
};
