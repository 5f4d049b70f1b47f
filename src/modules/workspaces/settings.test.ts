import fc from 'fast-check';
import { Value } from 'typebox/value';
import { describe, expect, it } from 'vitest';
import { applySettingsPatch, effectiveSettings } from './settings';
import { DEFAULT_SETTINGS, SettingsPatchSchema, WorkspaceSettingsSchema } from './settings.schemas';

/** A valid value, or null (restore the default), or absent, for each setting. */
const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(fc.option(arb, { nil: null }), { nil: undefined });
const patchArb = fc.record(
  {
    rate_limits: fc.option(
      fc.record(
        {
          requests_per_minute: maybe(fc.integer({ min: 1, max: 1_000_000_000 })),
          batch_events_per_minute: maybe(fc.integer({ min: 1, max: 1_000_000_000 })),
        },
        { requiredKeys: [] },
      ),
      { nil: null },
    ),
    junk_identifiers: maybe(fc.array(fc.string({ minLength: 1, maxLength: 20 }), { maxLength: 5 })),
    merge_cap: maybe(fc.integer({ min: 1, max: 1000 })),
    churn_threshold: maybe(fc.double({ min: 0.001, max: 0.999, noNaN: true })),
    discount_rate: maybe(fc.double({ min: 0, max: 1, noNaN: true })),
    clv_horizon_days: maybe(fc.integer({ min: 30, max: 1825 })),
    retention: fc.option(
      fc.record(
        {
          events_days: maybe(fc.oneof(fc.integer({ min: 1, max: 36_500 }), fc.constant('forever' as const))),
          outbox_days: maybe(fc.oneof(fc.integer({ min: 1, max: 36_500 }), fc.constant('forever' as const))),
          audit_days: maybe(fc.integer({ min: 1, max: 36_500 })),
        },
        { requiredKeys: [] },
      ),
      { nil: null },
    ),
    consent_default: maybe(fc.constantFrom('granted' as const, 'denied' as const)),
  },
  { requiredKeys: [] },
);

/** The settings that are groups of settings, merged key by key. */
const GROUPS = ['rate_limits', 'retention'] as const;

/** What each setting should be after a sequence of patches, read the naive way. */
function expected(patches: ReadonlyArray<Record<string, unknown>>) {
  const out: Record<string, unknown> = structuredClone(DEFAULT_SETTINGS) as Record<string, unknown>;
  for (const p of patches) {
    for (const [k, v] of Object.entries(p)) {
      if (v === undefined) continue;
      if ((GROUPS as readonly string[]).includes(k)) {
        const group = out[k] as Record<string, unknown>;
        const defaults = (DEFAULT_SETTINGS as Record<string, unknown>)[k] as Record<string, unknown>;
        for (const rk of Object.keys(defaults)) {
          const nv = v === null ? null : (v as Record<string, unknown>)[rk];
          if (nv === null) group[rk] = defaults[rk];
          else if (nv !== undefined) group[rk] = nv;
        }
      } else out[k] = v === null ? (DEFAULT_SETTINGS as Record<string, unknown>)[k] : v;
    }
  }
  return out;
}

describe('workspace settings', () => {
  it('are the documented defaults when nothing is stored', () => {
    expect(effectiveSettings({})).toEqual({
      rate_limits: { requests_per_minute: 1000, batch_events_per_minute: 10_000 },
      junk_identifiers: [],
      merge_cap: 100,
      churn_threshold: 0.7,
      discount_rate: 0.1,
      clv_horizon_days: 365,
      analytics_concurrency: 2,
      retention: {
        events_days: 'forever',
        dead_letters_days: 'forever',
        outbox_days: 30,
        segment_changes_days: 'forever',
        lineage_days: 'forever',
        audit_days: 400,
      },
      consent_default: 'granted',
    });
    expect(Value.Check(WorkspaceSettingsSchema, effectiveSettings(null))).toBe(true);
  });

  it('after any sequence of patches are what each patch said last, or the default after a null', () => {
    fc.assert(
      fc.property(fc.array(patchArb, { maxLength: 6 }), (patches) => {
        let stored: Record<string, unknown> = {};
        for (const p of patches) {
          expect(Value.Check(SettingsPatchSchema, p)).toBe(true);
          stored = applySettingsPatch(stored, p);
        }
        const effective = effectiveSettings(stored);
        expect(effective).toEqual(expected(patches));
        expect(Value.Check(WorkspaceSettingsSchema, effective)).toBe(true);
      }),
    );
  });

  it('store only what was set, and keep keys written by hand that the service does not know', () => {
    const stored = applySettingsPatch(
      { legacy: { x: 1 }, merge_cap: 5 },
      { merge_cap: null, rate_limits: { requests_per_minute: 9 } },
    );
    expect(stored).toEqual({ legacy: { x: 1 }, rate_limits: { requests_per_minute: 9 } });
    expect(applySettingsPatch(stored, { rate_limits: { requests_per_minute: null } })).toEqual({
      legacy: { x: 1 },
    });
  });

  it('ignore stored values a patch could not have written (hand-written SQL), setting by setting', () => {
    const s = effectiveSettings({
      rate_limits: { requests_per_minute: 0, batch_events_per_minute: 50 },
      junk_identifiers: [1, 2],
      churn_threshold: 1,
      clv_horizon_days: 400,
    });
    expect(s.rate_limits).toEqual({ requests_per_minute: 1000, batch_events_per_minute: 50 });
    expect(s.junk_identifiers).toEqual([]);
    expect(s.churn_threshold).toBe(0.7);
    expect(s.clv_horizon_days).toBe(400);
  });

  it('are frozen: a reader cannot change what the cache hands to the next one', () => {
    const s = effectiveSettings({ junk_identifiers: ['x'] });
    expect(Object.isFrozen(s) && Object.isFrozen(s.rate_limits) && Object.isFrozen(s.junk_identifiers)).toBe(
      true,
    );
  });
});
