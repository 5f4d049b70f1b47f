import type { Settings } from '../api/types';

/** The settings form's values: numbers as typed (a cleared field is ''). */
export type Values = {
  requests_per_minute: number | string;
  batch_events_per_minute: number | string;
  junk_identifiers: string[];
  merge_cap: number | string;
  churn_threshold: number | string;
  discount_rate: number | string;
  clv_horizon_days: number | string;
  analytics_concurrency: number | string;
};

export const toValues = (s: Settings): Values => ({
  requests_per_minute: s.rate_limits.requests_per_minute,
  batch_events_per_minute: s.rate_limits.batch_events_per_minute,
  junk_identifiers: s.junk_identifiers,
  merge_cap: s.merge_cap,
  churn_threshold: s.churn_threshold,
  discount_rate: s.discount_rate,
  clv_horizon_days: s.clv_horizon_days,
  analytics_concurrency: s.analytics_concurrency,
});

/**
 * A JSON merge patch (RFC 7396) of what the form changed: keys left alone are not sent, so a
 * workspace keeps following the defaults it never changed.
 */
export function patchOf(current: Settings, v: Values): Record<string, unknown> {
  const patch: Record<string, unknown> = {};
  const rate: Record<string, number> = {};
  if (Number(v.requests_per_minute) !== current.rate_limits.requests_per_minute)
    rate.requests_per_minute = Number(v.requests_per_minute);
  if (Number(v.batch_events_per_minute) !== current.rate_limits.batch_events_per_minute)
    rate.batch_events_per_minute = Number(v.batch_events_per_minute);
  if (Object.keys(rate).length) patch.rate_limits = rate;
  if (JSON.stringify(v.junk_identifiers) !== JSON.stringify(current.junk_identifiers))
    patch.junk_identifiers = v.junk_identifiers;
  for (const k of [
    'merge_cap',
    'churn_threshold',
    'discount_rate',
    'clv_horizon_days',
    'analytics_concurrency',
  ] as const)
    if (Number(v[k]) !== current[k]) patch[k] = Number(v[k]);
  return patch;
}
