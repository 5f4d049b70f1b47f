import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../../../test/expect-error';
import { startTestService, type TestService, type TestWorkspace } from '../../../test/harness';
import { waitProcessed } from '../processing/processing.test-kit';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc?.close());

const DEFAULTS = {
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
};

const patch = (ws: TestWorkspace, body: unknown) =>
  svc.call('PATCH', '/tenant/settings', { key: ws.adminKey, body });
const stored = async (ws: TestWorkspace) =>
  (
    await svc.rt.deps.db.query<{ settings: unknown }>('SELECT settings FROM workspaces WHERE id = $1', [
      ws.id,
    ])
  ).rows[0]!.settings;

describe('GET /tenant/settings', () => {
  it('answers every setting with its default for a workspace that changed nothing', async () => {
    const ws = await svc.newWorkspace('fresh');
    const res = await svc.call('GET', '/tenant/settings', { key: ws.adminKey });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'success', data: DEFAULTS });
  });

  it('fills in defaults around hand-written settings and ignores values that are not valid', async () => {
    const ws = await svc.newWorkspace('hand-written');
    await svc.rt.deps.db.query('UPDATE workspaces SET settings = $2::jsonb WHERE id = $1', [
      ws.id,
      JSON.stringify({
        rate_limits: { requests_per_minute: 7, batch_events_per_minute: -1 },
        merge_cap: 'x',
      }),
    ]);
    const res = await svc.call('GET', '/tenant/settings', { key: ws.adminKey });
    expect(res.body.data).toEqual({
      ...DEFAULTS,
      rate_limits: { ...DEFAULTS.rate_limits, requests_per_minute: 7 },
    });
  });

  it('is refused to a key without the admin scope', async () => {
    const ws = await svc.newWorkspace('scoped');
    for (const scope of ['editor', 'viewer', 'ingest']) {
      const key = await ws.key([scope]);
      expectError(await svc.call('GET', '/tenant/settings', { key }), 403, 'INSUFFICIENT_SCOPE');
      expectError(
        await svc.call('PATCH', '/tenant/settings', { key, body: { merge_cap: 5 } }),
        403,
        'INSUFFICIENT_SCOPE',
      );
    }
  });
});

describe('PATCH /tenant/settings', () => {
  it('merges a partial change, nested rate limits included, and answers the settings in effect', async () => {
    const ws = await svc.newWorkspace('merge');
    const first = await patch(ws, { churn_threshold: 0.5, rate_limits: { requests_per_minute: 500 } });
    expect(first.status).toBe(200);
    expect(first.body.data).toEqual({
      ...DEFAULTS,
      churn_threshold: 0.5,
      rate_limits: { ...DEFAULTS.rate_limits, requests_per_minute: 500 },
    });
    const second = await patch(ws, {
      rate_limits: { batch_events_per_minute: 20 },
      junk_identifiers: ['n/a-x'],
    });
    expect(second.body.data).toEqual({
      ...DEFAULTS,
      churn_threshold: 0.5,
      junk_identifiers: ['n/a-x'],
      rate_limits: { requests_per_minute: 500, batch_events_per_minute: 20 },
    });
    expect((await svc.call('GET', '/tenant/settings', { key: ws.adminKey })).body.data).toEqual(
      second.body.data,
    );
    // Only what was changed is stored: later default changes still reach this workspace.
    expect(await stored(ws)).toEqual({
      churn_threshold: 0.5,
      junk_identifiers: ['n/a-x'],
      rate_limits: { requests_per_minute: 500, batch_events_per_minute: 20 },
    });
  });

  it('restores a default when a setting is patched to null', async () => {
    const ws = await svc.newWorkspace('reset');
    await patch(ws, {
      discount_rate: 0.2,
      rate_limits: { requests_per_minute: 50, batch_events_per_minute: 60 },
    });
    const res = await patch(ws, { discount_rate: null, rate_limits: { requests_per_minute: null } });
    expect(res.body.data).toEqual({
      ...DEFAULTS,
      rate_limits: { ...DEFAULTS.rate_limits, batch_events_per_minute: 60 },
    });
    await patch(ws, { rate_limits: null });
    expect(await stored(ws)).toEqual({});
  });

  it.each([
    ['an unknown key', { colour: 'blue' }, ['/colour']],
    ['an unknown rate limit', { rate_limits: { per_hour: 5 } }, ['/rate_limits/per_hour']],
    ['a wrong type', { merge_cap: '10', junk_identifiers: 'x' }, ['/merge_cap', '/junk_identifiers']],
    ['a limit of zero', { rate_limits: { requests_per_minute: 0 } }, ['/rate_limits/requests_per_minute']],
    [
      'a fractional limit',
      { rate_limits: { batch_events_per_minute: 1.5 } },
      ['/rate_limits/batch_events_per_minute'],
    ],
    ['a churn threshold of 1', { churn_threshold: 1 }, ['/churn_threshold']],
    ['a churn threshold of 0', { churn_threshold: 0 }, ['/churn_threshold']],
    ['a discount rate above 1', { discount_rate: 1.01 }, ['/discount_rate']],
    ['a horizon under 30 days', { clv_horizon_days: 29 }, ['/clv_horizon_days']],
    ['a horizon over five years', { clv_horizon_days: 1826 }, ['/clv_horizon_days']],
    ['no calculations at once', { analytics_concurrency: 0 }, ['/analytics_concurrency']],
    ['more calculations at once than 16', { analytics_concurrency: 17 }, ['/analytics_concurrency']],
    ['a retention of no days', { retention: { events_days: 0 } }, ['/retention/events_days']],
    [
      'a retention that is neither days nor forever',
      { retention: { outbox_days: 'never' } },
      ['/retention/outbox_days'],
    ],
    ['an unknown retention', { retention: { profiles_days: 5 } }, ['/retention/profiles_days']],
    [
      'a consent default that is neither granted nor denied',
      { consent_default: 'maybe' },
      ['/consent_default'],
    ],
    ['a merge cap of 0', { merge_cap: 0 }, ['/merge_cap']],
    ['an empty junk value', { junk_identifiers: ['ok', ''] }, ['/junk_identifiers/1']],
  ])(
    'refuses %s: 400 with the JSON pointer of each bad value, nothing stored',
    async (_what, body, paths) => {
      const ws = await svc.newWorkspace('invalid');
      const res = await patch(ws, body);
      expectError(res, 400, 'VALIDATION_ERROR');
      expect(res.body.details.map((d: { path: string }) => d.path).sort()).toEqual([...paths].sort());
      expect(await stored(ws)).toEqual({});
    },
  );

  it('applies a new rate limit from the very next request', async () => {
    const ws = await svc.newWorkspace('limited');
    expect((await svc.call('GET', '/tenant/settings', { key: ws.adminKey })).headers['ratelimit-limit']).toBe(
      '1000',
    );
    expect((await patch(ws, { rate_limits: { requests_per_minute: 3 } })).status).toBe(200);
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await svc.call('GET', '/tenant/settings', { key: ws.adminKey });
      expect(res.headers['ratelimit-limit']).toBe('3');
      statuses.push(res.status);
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
  });

  it('changes identity resolution: an identity on the new junk list links nothing', async () => {
    const ws = await svc.newWorkspace('junk');
    const ingest = async (identity: string) => {
      const anonymousId = randomUUID();
      const res = await svc.call('POST', '/api/ingest', {
        key: ws.adminKey,
        body: { event_type: 'identify', event_name: 'Signed in', anonymous_id: anonymousId, identity },
      });
      expect(res.status).toBe(202);
      await waitProcessed(svc.rt.deps.db);
      return anonymousId;
    };
    const profileOf = async (identity: string) =>
      (
        await svc.call('GET', `/tenant/profiles?identity=${encodeURIComponent(identity)}`, {
          key: ws.adminKey,
        })
      ).body.data;

    // Before: two devices signing in as the shared test account become one profile.
    await ingest('qa@shop.test');
    await ingest('qa@shop.test');
    expect(await profileOf('qa@shop.test')).toHaveLength(1);

    await patch(ws, { junk_identifiers: ['demo-user', ' QA2@Shop.Test '] });
    const a = await ingest('qa2@shop.test');
    const b = await ingest('QA2@shop.test');
    expect(await profileOf('qa2@shop.test')).toEqual([]);
    const [pa] = await profileOf(a);
    const [pb] = await profileOf(b);
    expect(pa.id).not.toBe(pb.id);
  });

  it('lowers the merge cap of POST /identity/merge', async () => {
    const ws = await svc.newWorkspace('cap');
    await patch(ws, { merge_cap: 1 });
    const ids: string[] = [];
    for (const n of [1, 2, 3]) {
      const res = await svc.call('POST', '/tenant/profiles', {
        key: ws.adminKey,
        body: { email: `cap${n}@example.com` },
      });
      ids.push(res.body.data.id);
    }
    const merge = (secondary: string) =>
      svc.call('POST', '/identity/merge', {
        key: ws.adminKey,
        body: { primary_profile_id: ids[0], secondary_profile_ids: [secondary] },
      });
    expect((await merge(ids[1]!)).status).toBe(200);
    const refused = await merge(ids[2]!);
    expectError(refused, 409, 'CONFLICT');
    expect(refused.body.message).toContain('cap of 1');
  });
});
