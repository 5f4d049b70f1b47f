import { describe, expect, it } from 'vitest';
import type { Settings } from '../api/types';
import { patchOf, toValues } from './settings';

const current: Settings = {
  rate_limits: { requests_per_minute: 1000, batch_events_per_minute: 10000 },
  junk_identifiers: [],
  merge_cap: 100,
  churn_threshold: 0.7,
  discount_rate: 0.1,
  clv_horizon_days: 365,
  analytics_concurrency: 2,
  consent_default: 'granted',
};

describe('the settings form sends only what changed', () => {
  it('sends nothing when nothing changed', () => {
    expect(patchOf(current, toValues(current))).toEqual({});
  });

  it('sends one rate limit alone, and a whole new list of junk identifiers', () => {
    const v = { ...toValues(current), batch_events_per_minute: 20000, junk_identifiers: ['test', 'none'] };
    expect(patchOf(current, v)).toEqual({
      rate_limits: { batch_events_per_minute: 20000 },
      junk_identifiers: ['test', 'none'],
    });
  });

  it('sends numbers typed as text as numbers', () => {
    expect(patchOf(current, { ...toValues(current), churn_threshold: '0.8', merge_cap: '5' })).toEqual({
      churn_threshold: 0.8,
      merge_cap: 5,
    });
  });
});
