import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINE, startTestService, type TestService } from '../../test/harness';
import { onlyOn } from '../../test/skips';
import { erasureHorizonsTask } from '../modules/processing';
import { waitProcessed } from '../modules/processing/processing.test-kit';

/**
 * The erasure workflow's own cases (src/workflows/erasure.ts); the person who came in every way is
 * test/erasure-everywhere.test.ts.
 */
let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc?.close());

const db = () => svc.rt.deps.db;
const count = async (sql: string, params: unknown[] = []) =>
  (await db().query<{ n: number }>(sql, params)).rows[0]!.n;
const profileOf = async (identity: string) =>
  (await svc.call('GET', `/tenant/profiles?identity=${encodeURIComponent(identity)}`)).body.data[0] ?? null;
const ingest = async (events: unknown[]) => {
  const res = await svc.call('POST', '/tenant/ingest/batch', { body: events });
  expect(res.status, res.text).toBe(202);
  await waitProcessed(db(), 60_000);
};

describe(`an erasure (${ENGINE})`, () => {
  it('removes a history longer than many slices, and counts every row', async () => {
    const email = `long.${randomUUID()}@example.com`;
    const n = 3_000;
    for (let i = 0; i < n; i += 1_000) {
      await ingest(
        Array.from({ length: 1_000 }, (_, j) => ({
          identity: email,
          event_type: 'track',
          event_name: 'Step',
          payload: { i: i + j, kind: 'walk' },
        })),
      );
    }
    const p = await profileOf(email);
    const res = await svc.call('DELETE', `/tenant/profiles/${p.id}`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.counts).toMatchObject({ events: n, event_properties: 2 * n, profiles: 1 });
    expect(await count('SELECT count(*)::int AS n FROM event_profiles WHERE profile_id = $1', [p.id])).toBe(
      0,
    );
    expect(await count('SELECT count(*)::int AS n FROM event_properties WHERE profile_id = $1', [p.id])).toBe(
      0,
    );
  }, 120_000);

  it('without suppression, lets the person come back with new events, as a new profile', async () => {
    const email = `back.${randomUUID()}@example.com`;
    await ingest([
      { identity: email, event_type: 'identify', event_name: 'x', payload: { first_name: 'Old' } },
    ]);
    const old = await profileOf(email);
    expect((await svc.call('DELETE', `/tenant/profiles/${old.id}`)).status).toBe(200);
    await ingest([
      { identity: email, event_type: 'identify', event_name: 'y', payload: { last_name: 'New' } },
    ]);
    const again = await profileOf(email);
    expect(again).toMatchObject({ first_name: null, last_name: 'New' });
    expect(again.id).not.toBe(old.id);
  });

  it('drops the spent horizons once no event received before them waits, and keeps suppressions for good', async () => {
    const kept = `kept.${randomUUID()}@example.com`;
    const passing = `passing.${randomUUID()}@example.com`;
    await ingest([
      { identity: kept, event_type: 'track', event_name: 'x' },
      { identity: passing, event_type: 'track', event_name: 'x' },
    ]);
    await svc.call('DELETE', `/tenant/profiles/${(await profileOf(kept)).id}?suppress=true`);
    await svc.call('DELETE', `/tenant/profiles/${(await profileOf(passing)).id}`);
    const horizons = 'SELECT count(*)::int AS n FROM identifier_suppressions WHERE until_seq IS NOT NULL';
    const forGood = 'SELECT count(*)::int AS n FROM identifier_suppressions WHERE until_seq IS NULL';
    expect(await count(horizons)).toBeGreaterThan(0);
    const suppressed = await count(forGood);
    // Dead letters of other tests may wait with older seqs: the task drops what is past all of them.
    await db().exec('DELETE FROM dead_letters');
    await erasureHorizonsTask().run(db(), new AbortController().signal);
    expect(await count(horizons)).toBe(0);
    expect(await count(forGood)).toBe(suppressed);
  });
});

onlyOn(
  'postgres',
  'PGlite runs one transaction at a time: no append can be in flight during an erasure',
).describe('an erasure beside an append still committing', () => {
  it('drops the event received before the erasure that commits after it, rather than bring the person back', async () => {
    const email = `race.${randomUUID()}@example.com`;
    await ingest([
      { identity: email, event_type: 'identify', event_name: 'x', payload: { first_name: 'Ray' } },
    ]);
    const p = await profileOf(email);
    const client = new pg.Client({
      connectionString: process.env.DATABASE_URL,
      options: `-c search_path=${svc.config.databaseSchema}`,
    });
    await client.connect();
    try {
      // An append in flight: its seq is taken, its row is not visible to the erasure's scans.
      await client.query('BEGIN');
      await client.query(
        `INSERT INTO events (id, workspace_id, event_type, event_name, identity, payload, occurred_at)
           VALUES ($1, $2, 'identify', 'late', $3, '{"first_name":"Ray"}', now())`,
        [`evt_race${randomUUID().slice(0, 8)}`, svc.ws.id, email],
      );
      expect((await svc.call('DELETE', `/tenant/profiles/${p.id}`)).status).toBe(200);
      await client.query('COMMIT');
    } finally {
      await client.end();
    }
    await waitProcessed(db());
    expect(await profileOf(email)).toBeNull();
    expect(await count('SELECT count(*)::int AS n FROM events WHERE identity = $1', [email])).toBe(0);
  });
});
