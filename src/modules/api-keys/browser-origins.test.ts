import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestService, type TestService } from '../../../test/harness';
import { buildApp } from '../../app';
import type { Queryable } from '../../platform/db';
import { createOriginIndex, type OriginIndex } from '../../platform/http/cors';
import type { App } from '../../platform/http/types';
import { browserOriginSource } from './api-keys.service';

/**
 * Issue 23, finding 3: an anonymous preflight must not cost as much as every key together. The
 * service holds 3000 keys of 100 domains each (30 workspaces, written straight into the table), and
 * a flood of preflights from origins none of them allows must cost no database work.
 */
const WORKSPACES = 30;
const KEYS_PER_WORKSPACE = 100;
const DOMAINS_PER_KEY = 100;

/** Keys written in bulk (no API, no cap): key k of workspace w allows `k<k>-d<d>.shop.example` and `*.k<k>-d<d>.example`. */
async function bulkKeys(
  q: Queryable,
  firstWorkspace: number,
  workspaces: number,
  keysEach: number,
  domains: number,
) {
  await q.query(
    `INSERT INTO workspaces (id, name)
     SELECT ('00000000-0000-4000-8000-' || lpad(w::text, 12, '0'))::uuid, 'bulk ' || w
     FROM generate_series($1::int, $2::int) w`,
    [firstWorkspace, firstWorkspace + workspaces - 1],
  );
  await q.query(
    `INSERT INTO api_keys (id, workspace_id, name, key_hash, prefix, scopes, allowed_domains)
     SELECT 'key_bulk_' || k, ('00000000-0000-4000-8000-' || lpad(($1::int + k / $3::int)::text, 12, '0'))::uuid,
            'bulk ' || k, md5('bulk' || k) || md5('key' || k), 'cdp_pk_bulk', ARRAY['ingest'],
            ARRAY(SELECT CASE WHEN d % 2 = 0 THEN 'k' || k || '-d' || d || '.shop.example'
                              ELSE '*.k' || k || '-d' || d || '.example' END
                  FROM generate_series(1, $4::int) d)
     FROM generate_series(0, $2::int * $3::int - 1) k`,
    [firstWorkspace, workspaces, keysEach, domains],
  );
}

const OPERATOR_TOKEN = 'operator-token-of-the-origins-test';
let svc: TestService;
let app: App;
let origins: OriginIndex;

beforeAll(async () => {
  svc = await startTestService({ CDP_OPERATOR_TOKEN: OPERATOR_TOKEN });
  await bulkKeys(svc.rt.deps.db, 1000, WORKSPACES, KEYS_PER_WORKSPACE, DOMAINS_PER_KEY);
  // A process starting on this database: its index loads them all (rows written by hand send no
  // notification to the service's own index).
  origins = createOriginIndex(browserOriginSource(svc.rt.deps.db));
  await origins.start();
  app = await buildApp({ ...svc.rt.deps, origins });
  await app.ready();
}, 120_000);
afterAll(async () => {
  await app?.close();
  await origins?.stop();
  await svc?.close();
});

const preflight = (origin: string) =>
  app.inject({
    method: 'OPTIONS',
    url: '/api/ingest',
    headers: { origin, 'access-control-request-method': 'POST' },
  });

describe('preflights with 3000 keys of 100 domains', () => {
  it('answers the origins of any key, exact or wildcard', async () => {
    expect((await preflight('https://k2999-d100.shop.example')).statusCode).toBe(204);
    expect((await preflight('https://a.b.k0-d1.example')).statusCode).toBe(204);
  });

  it('holds every pattern: 300,000', () => {
    expect(origins.stats()).toMatchObject({ owners: 3000, patterns: 300_000, fullLoads: 1, stale: false });
  });

  it('shows its size and its loads to the operator', async () => {
    const res = await app.inject({
      method: 'GET',
      url: '/system/stats',
      headers: { authorization: `Bearer ${OPERATOR_TOKEN}` },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().data.origin_index).toEqual({
      keys: 3000,
      patterns: 300_000,
      full_loads: 1,
      key_reads: 0,
      stale: false,
    });
  });

  it('looks a foreign origin up label by label, not key by key', async () => {
    const before = origins.stats().probes;
    expect((await preflight('https://www.evil.example.com')).statusCode).toBe(403);
    expect(origins.stats().probes - before).toBe(4);
  });

  it('answers a flood of foreign origins without a single database statement', async () => {
    const query = vi.spyOn(svc.rt.deps.db, 'query');
    const loads = origins.stats().fullLoads;
    try {
      for (let i = 0; i < 50; i++) {
        const res = await preflight(`https://x${i}.evil.example.com`);
        expect(res.statusCode).toBe(403);
        // Time moves on between two floods: a cache that reloads on a miss would reload now.
        vi.setSystemTime(Date.now() + 2_000);
      }
      expect(query).not.toHaveBeenCalled();
      expect(origins.stats().fullLoads).toBe(loads);
    } finally {
      vi.useRealTimers();
      query.mockRestore();
    }
  });
});
