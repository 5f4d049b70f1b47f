import type { Queryable } from '../../platform/db';
import type { SettingsStore } from '../workspaces';
import type { ScoreSettings } from './scoring';

/**
 * The one place the intelligence module reads its workspace settings (churn threshold, discount
 * rate, CLV horizon), through the workspaces module's accessor, so a PATCH /tenant/settings reaches
 * the next score computed on any instance.
 */
export async function readScoreSettings(
  settings: SettingsStore,
  q: Queryable,
  workspaceId: string,
): Promise<ScoreSettings> {
  const s = await settings.read(q, workspaceId);
  return {
    churnThreshold: s.churn_threshold,
    discountRate: s.discount_rate,
    horizonDays: s.clv_horizon_days,
  };
}
