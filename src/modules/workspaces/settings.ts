import { Value } from 'typebox/value';
import {
  type ConsentDefault,
  DEFAULT_SETTINGS,
  FIELD_SCHEMAS,
  RETENTION_KEYS,
  type RetentionDays,
  type SettingsPatch,
  type WorkspaceSettings,
} from './settings.schemas';

/**
 * The pure core of workspace settings: what is stored (`workspaces.settings`, only the keys a
 * workspace changed) versus what is in effect (every key, defaults filled in). Storing overrides
 * only means a default changed in a later release reaches every workspace that never set it.
 */

type Stored = Readonly<Record<string, unknown>>;

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The stored value if it is valid for the setting, else the default: stored JSON predates validation. */
function pick<T>(key: keyof typeof FIELD_SCHEMAS, stored: unknown, fallback: T): T {
  return stored !== undefined && Value.Check(FIELD_SCHEMAS[key], stored) ? (stored as T) : fallback;
}

/** The settings in effect for stored (possibly partial, possibly hand-written) settings. Frozen. */
export function effectiveSettings(stored: Stored | null | undefined): WorkspaceSettings {
  const s = stored ?? {};
  const rl = isRecord(s.rate_limits) ? s.rate_limits : {};
  const rt = isRecord(s.retention) ? s.retention : {};
  const d = DEFAULT_SETTINGS;
  return Object.freeze({
    rate_limits: Object.freeze({
      requests_per_minute: pick(
        'requests_per_minute',
        rl.requests_per_minute,
        d.rate_limits.requests_per_minute,
      ),
      batch_events_per_minute: pick(
        'batch_events_per_minute',
        rl.batch_events_per_minute,
        d.rate_limits.batch_events_per_minute,
      ),
    }),
    junk_identifiers: Object.freeze([...pick<string[]>('junk_identifiers', s.junk_identifiers, [])]),
    merge_cap: pick('merge_cap', s.merge_cap, d.merge_cap),
    churn_threshold: pick('churn_threshold', s.churn_threshold, d.churn_threshold),
    discount_rate: pick('discount_rate', s.discount_rate, d.discount_rate),
    clv_horizon_days: pick('clv_horizon_days', s.clv_horizon_days, d.clv_horizon_days),
    analytics_concurrency: pick('analytics_concurrency', s.analytics_concurrency, d.analytics_concurrency),
    retention: Object.freeze(
      Object.fromEntries(RETENTION_KEYS.map((k) => [k, pick<RetentionDays>(k, rt[k], d.retention[k])])),
    ),
    consent_default: pick<ConsentDefault>('consent_default', s.consent_default, d.consent_default),
  }) as WorkspaceSettings;
}

/** Settings that are groups of settings: a patch merges into them key by key. */
const GROUPS = new Set(['rate_limits', 'retention']);

/**
 * The stored settings after a (validated) patch, JSON merge patch style (RFC 7396): a value
 * replaces, `null` removes the override (back to the default), a group (`rate_limits`, `retention`)
 * merges key by key, arrays replace whole. Keys the service does not know (written by hand) are
 * kept as they were.
 */
export function applySettingsPatch(
  stored: Stored | null | undefined,
  patch: SettingsPatch,
): Record<string, unknown> {
  const next: Record<string, unknown> = { ...(stored ?? {}) };
  for (const [key, value] of Object.entries(patch)) {
    if (value === undefined) continue;
    if (value === null) {
      delete next[key];
    } else if (GROUPS.has(key)) {
      const group: Record<string, unknown> = isRecord(next[key]) ? { ...next[key] } : {};
      for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
        if (v === undefined) continue;
        if (v === null) delete group[k];
        else group[k] = v;
      }
      if (Object.keys(group).length === 0) delete next[key];
      else next[key] = group;
    } else {
      next[key] = value;
    }
  }
  return next;
}
